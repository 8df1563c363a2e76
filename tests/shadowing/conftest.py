"""Shadow mode's comparison tests run twice: with its C comparison (close.c, where it
builds) and with NumPy's passes; a module asks with
``pytestmark = pytest.mark.usefixtures("path")``."""

import pytest

from fastnn.shadowing import diff


@pytest.fixture(params=["C", "NumPy"])
def path(request, monkeypatch):
    """C: close.c's comparisons (skipped where it did not build); NumPy: switched off."""
    if request.param == "C":
        if diff._close_functions() is None:
            pytest.skip(f"no C comparison here: {diff.native_status()}")
    else:
        monkeypatch.setattr(diff, "_close", [None, "off for a test"])
    return request.param
