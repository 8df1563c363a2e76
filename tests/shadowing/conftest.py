"""Fixtures of the shadow tests. ``path``: a comparison test runs three times, with shadow
mode's batch comparison in C (bulk.c, where it builds), with close.c's loops alone, and with
NumPy's passes. ``device_base``: a test of shadowing a device backend runs on each device
backend (opencl; cuda where a GPU is) with each wrapper of device calls. A module asks with
``pytestmark = pytest.mark.usefixtures(...)``."""

import pytest

import fastnn as fnn
from fastnn.shadowing import diff, record
from tests.fake_backends import forget

BASES = ("opencl", "cuda")  # the device backends that faulty clones are made of
WRAPPERS = ("C wrapper", "Python wrapper")


@pytest.fixture(params=["bulk", "C", "NumPy"])
def path(request, monkeypatch):
    """bulk: bulk.c and close.c (skipped where they did not build); C: close.c only;
    NumPy: both switched off."""
    if request.param == "bulk" and diff.bulk_function() is None:
        pytest.skip(f"no C batch comparison here: {diff._bulk[1]}")
    if request.param in ("bulk", "C"):
        if diff._close_functions() is None:
            pytest.skip(f"no C comparison here: {diff.native_status()}")
    else:
        monkeypatch.setattr(diff, "_close", [None, "off for a test"])
    if request.param != "bulk":
        monkeypatch.setattr(diff, "_bulk", [None, "off for a test", None, None])
    return request.param


@pytest.fixture(params=[(b, w) for b in BASES for w in WRAPPERS],
                ids=[f"{b}-{w.split()[0]}" for b in BASES for w in WRAPPERS])
def device_base(request, monkeypatch):
    """The device backend's name (faulty.install's ``base``), with the device calls
    recorded by record.c's wrapper (skipped where it did not build) or by session.py's
    Python wrapper; skipped where the backend is unavailable. The faulty backends that
    the test installed are forgotten after it."""
    base, wrapper = request.param
    try:
        fnn.Device(base)
    except fnn.BackendError as exc:
        pytest.skip(f"{base} unavailable: {exc}")
    if wrapper == "C wrapper":
        if record.recorder_function() is None:
            pytest.skip(f"no C wrapper here: {record.status()}")
    else:
        monkeypatch.setattr(record, "_state", [None, "off for a test"])
    yield base
    forget()
