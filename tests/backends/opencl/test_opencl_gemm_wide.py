"""16-lane vectors in the packed CPU GEMM (fastnn_opencl.gemm_wide): the child-process probe's
verdict is cached on disk by device name, a probe that crashes, fails or hangs leaves the
kernel at 32-byte vectors, the environment switch overrides it, and float64 never goes
wide. (The products themselves, at whatever width the device runs, are checked against
NumPy in test_opencl_gemm_tune.py.)"""

import json
import subprocess

import numpy as np
import pytest


@pytest.fixture
def wide(ocl, monkeypatch, tmp_path):
    from fastnn_opencl import gemm_wide

    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    monkeypatch.setenv("FASTNN_OPENCL_TUNE", "1")
    monkeypatch.delenv("FASTNN_OPENCL_WIDE", raising=False)
    monkeypatch.setattr(gemm_wide, "_verdicts", {})
    return gemm_wide


def _device():
    from fastnn_opencl.runtime import state

    return state(0)


def test_the_verdict_is_cached_on_disk_by_device_name(wide, monkeypatch):
    from fastnn_opencl import gemm_tune

    dev = _device()
    calls = []
    monkeypatch.setattr(wide, "probe", lambda d: calls.append(d.name) or True)
    assert wide.enabled(dev) is True
    assert json.loads(gemm_tune.cache_path().read_text())[f"{dev.name}|{wide.VERSION}"] is True
    wide._verdicts.clear()  # a new process: read from disk, no second probe
    assert wide.enabled(dev) is True
    assert calls == [dev.name]


@pytest.mark.parametrize("outcome", ["crash", "wrong", "hang"])
def test_a_failing_probe_keeps_32_byte_vectors(wide, monkeypatch, outcome):
    from fastnn_opencl import linalg

    def run(*args, **kwargs):
        if outcome == "hang":
            raise subprocess.TimeoutExpired(args[0], kwargs.get("timeout"))
        return subprocess.CompletedProcess(args[0], -6 if outcome == "crash" else 3)

    monkeypatch.setattr(wide.subprocess, "run", run)
    dev = _device()
    assert wide.probe(dev) is False
    assert wide.enabled(dev) is False
    assert linalg.packed_lanes(dev, "float32") == linalg.vector_lanes(dev, "float32")


def test_the_environment_overrides_the_probe_and_float64_stays_narrow(wide, monkeypatch):
    from fastnn_opencl import linalg

    dev = _device()
    monkeypatch.setattr(wide, "probe", lambda d: pytest.fail("no probe expected"))
    monkeypatch.setenv("FASTNN_OPENCL_WIDE", "0")
    assert linalg.packed_lanes(dev, "float32") == linalg.vector_lanes(dev, "float32")
    monkeypatch.setenv("FASTNN_OPENCL_WIDE", "1")
    if dev.vector_width("float32") >= wide.LANES:
        assert linalg.packed_lanes(dev, "float32") == wide.LANES
    assert linalg.packed_lanes(dev, "float64") == linalg.vector_lanes(dev, "float64")
    monkeypatch.delenv("FASTNN_OPENCL_WIDE")
    monkeypatch.setenv("FASTNN_OPENCL_TUNE", "0")  # no probe: narrow
    assert wide.enabled(dev) is False


def test_the_real_probe_agrees_with_a_product_at_that_width(wide, monkeypatch):
    """The child process's verdict on this machine; where it says yes, a wide product in
    this process matches NumPy float64 (the probe's own check, repeated here)."""
    from fastnn_opencl import gemm_tune, linalg
    from fastnn_opencl.misc import from_numpy, to_numpy

    dev = _device()
    if not linalg.uses_cpu_kernels(dev) or dev.vector_width("float32") < wide.LANES:
        pytest.skip("no 16-lane float vectors on this device")
    if not wide.probe(dev):
        pytest.skip("this PoCL does not build or run the wide kernel right")
    monkeypatch.setenv("FASTNN_OPENCL_WIDE", "1")
    monkeypatch.setattr(gemm_tune, "blocks", lambda dev, dtype: (6, 2))
    rng = np.random.default_rng(2)
    m, k, n = 45, 530, 101
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    x, y = from_numpy(a.astype(np.float32), 0), from_numpy(b.astype(np.float32), 0)
    got = to_numpy(linalg.matmul(x, y))
    ref = a @ b
    assert np.abs(got - ref).max() <= 2e-6 * k ** 0.5 * np.abs(ref).max()
