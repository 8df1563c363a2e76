"""A backend's list of expected failures, which the conformance suite reads.

The list comes from (all that exist are merged):

1. the attribute ``CONFORMANCE_XFAIL`` of the backend's entry-point module
   (a string in the file format below, or a list of such lines);
2. the file ``conformance_xfail.txt`` in that module's package directory
   (a single-file module uses the attribute instead; ship the file as
   package data);
3. a file given with ``--conformance-xfail PATH``.

Format: one entry per line, ``PRIMITIVE [DTYPE ...]``; no dtype (or ``*``)
means every dtype; ``#`` starts a comment, which is shown as the reason::

    conv1d float16        # no half-precision conv kernel yet
    erf                   # not implemented

A listed check that fails is reported as xfail; one that passes as xpass
(remove the entry). A check that fails only because it reached a listed
primitive (e.g. gelu's gradient calls exp) is reported as xfail too.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from fastnn.api import hookspec, registry
from fastnn.api.dtypes import integer_names
from fastnn.conformance.compare import FLOAT_DTYPES

FILENAME = "conformance_xfail.txt"
# the rows of checks that test no single hook (test_threads.py) may be listed too
_HOOKS = set(hookspec.HOOKS) | {"threads"}
_DTYPES = FLOAT_DTYPES + (*integer_names(), "bool")  # integer checks: test_integers.py


def _composite_names() -> set:
    """The rows of composite ops (cases marked composite), which may be listed too."""
    from fastnn.conformance.cases import CASES

    return {name for name, case in CASES.items() if case.composite}


class XfailList:
    """primitive -> {dtype or "*": where it was listed (and why)}."""

    def __init__(self):
        self.entries: dict[str, dict[str, str]] = {}

    def add_text(self, text: str, source: str) -> None:
        for number, raw in enumerate(text.splitlines(), 1):
            body, _, comment = raw.partition("#")
            words = body.split()
            if not words:
                continue
            name, dtypes = words[0], words[1:] or ["*"]
            if name not in _HOOKS and name not in _composite_names():
                raise pytest.UsageError(
                    f"{source}, line {number}: {name!r} is not a hook of fastnn.api.hookspec; "
                    f"expected 'PRIMITIVE [DTYPE ...]' with one of: {', '.join(sorted(_HOOKS))}")
            for dtype in dtypes:
                if dtype != "*" and dtype not in _DTYPES:
                    raise pytest.UsageError(
                        f"{source}, line {number}: unknown dtype {dtype!r}; use one of "
                        f"{', '.join(_DTYPES)} or * (all)")
                why = f"{source}:{number}" + (f" ({comment.strip()})" if comment.strip() else "")
                self.entries.setdefault(name, {})[dtype] = why

    def reason(self, primitive: str, dtype: str) -> str | None:
        """Where (primitive, dtype) is listed, or None if it is expected to pass."""
        listed = self.entries.get(primitive, {})
        return listed.get(dtype) or listed.get("*")

    @classmethod
    def for_backend(cls, name: str, extra_path: str | None = None) -> XfailList:
        found = cls()
        eps = {ep.name: ep for ep in entry_points(group=registry.GROUP)}
        module = eps[name].load() if name in eps else None
        attribute = getattr(module, "CONFORMANCE_XFAIL", None)
        if attribute is not None:
            text = attribute if isinstance(attribute, str) else "\n".join(attribute)
            found.add_text(text, f"{module.__name__}.CONFORMANCE_XFAIL")
        module_file = getattr(module, "__file__", None)
        if module_file and hasattr(module, "__path__"):  # a package
            path = Path(module_file).parent / FILENAME
            if path.is_file():
                found.add_text(path.read_text(), str(path))
        if extra_path:
            path = Path(extra_path)
            if not path.is_file():
                raise pytest.UsageError(f"--conformance-xfail: no such file {extra_path!r}")
            found.add_text(path.read_text(), str(path))
        return found
