"""What the shadow tests that run on opencl share: a fixture that skips them where opencl
is unavailable (and forgets the faulty backends they installed), and the line of a
marker comment in a test file (the line a mismatch must blame)."""

from __future__ import annotations

import pytest

import fastnn as fnn
from tests.fake_backends import forget


@pytest.fixture(autouse=True)
def opencl_or_skip():
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    yield
    forget()


def line_in(path: str, marker: str) -> int:
    """The 1-based line of ``path`` that ends with the comment ``# marker``."""
    with open(path, encoding="utf-8") as source:
        return next(i + 1 for i, text in enumerate(source)
                    if text.rstrip().endswith(f"# {marker}"))
