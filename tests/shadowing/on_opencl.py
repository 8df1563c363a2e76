"""What the shadow tests that run on opencl share: a fixture that skips them where opencl
is unavailable (and forgets the faulty backends they installed) and runs each with both
wrappers of device calls, and the line of a marker comment in a test file (the line a
mismatch must blame)."""

from __future__ import annotations

import pytest

import fastnn as fnn
from fastnn.shadowing import record
from tests.fake_backends import forget


@pytest.fixture(autouse=True, params=["C wrapper", "Python wrapper"])
def opencl_or_skip(request, monkeypatch):
    """Each test twice: with the device calls recorded by record.c's wrapper (skipped
    where it did not build) and by session.py's Python wrapper."""
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    if request.param == "C wrapper":
        if record.recorder_function() is None:
            pytest.skip(f"no C wrapper here: {record.status()}")
    else:
        monkeypatch.setattr(record, "_state", [None, "off for a test"])
    yield request.param
    forget()


def line_in(path: str, marker: str) -> int:
    """The 1-based line of ``path`` that ends with the comment ``# marker``."""
    with open(path, encoding="utf-8") as source:
        return next(i + 1 for i, text in enumerate(source)
                    if text.rstrip().endswith(f"# {marker}"))
