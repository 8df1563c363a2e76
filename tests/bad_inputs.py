"""The table of bad inputs that tests/*/test_bad_inputs*.py share: one row per input,
``(id, call, exception, fragment of the message)``."""

from __future__ import annotations

import pytest


def rows(table) -> list:
    """The rows as pytest parameters ``(call, error, match)``, each with its id."""
    return [pytest.param(call, error, match, id=name) for name, call, error, match in table]


def check(call, error, match, *args) -> None:
    """``call(*args)`` raises ``error`` whose message matches the regex ``match``."""
    with pytest.raises(error, match=match):
        call(*args)
