"""Switching one of fastnn_cpu.native's C libraries off in a test, so that both the C
loops and the NumPy code beside them are checked (each library is cached in a list of
native's: ``_LOADED``, ``_NORM``, ``_ACT``, ``_CONV``)."""

import contextlib

import pytest
from fastnn_cpu import native


@contextlib.contextmanager
def off(cache: str):
    """The library cached in ``native.<cache>`` switched off inside the block."""
    kept = getattr(native, cache)[:]
    getattr(native, cache)[:] = [(None, "off for a test")]
    try:
        yield
    finally:
        getattr(native, cache)[:] = kept


def c_or_not(request, monkeypatch, cache: str, library) -> str:
    """For a fixture with params ["C", other]: the library off for ``other``, the test
    skipped for "C" where ``library()`` did not build; returns the param."""
    if request.param != "C":
        monkeypatch.setattr(native, cache, [(None, "off for a test")])
    elif library() is None:
        pytest.skip(f"no C loops here: {native.status()}")
    return request.param


def spy(monkeypatch, cache: str, library, keep=()) -> list:
    """Wrap the library cached in ``native.<cache>`` so that each entry point called is
    named, in order, in the list returned (a table of entry points by dtype, or a plain
    one; the attributes named in ``keep`` pass through); the test is skipped where the
    library did not build."""
    lib = library()
    if lib is None:
        pytest.skip(f"no C loops here: {native.status()}")
    calls = []

    def named(kind, fn):
        return lambda *a: calls.append(kind) or fn(*a)

    class Spy:
        def __getattr__(self, kind):
            found = getattr(lib, kind)
            if kind in keep:
                return found
            if isinstance(found, dict):
                return {c: named(kind, f) for c, f in found.items()}
            return named(kind, found) if callable(found) else found

    monkeypatch.setattr(native, cache, [(Spy(), "spied")])
    return calls
