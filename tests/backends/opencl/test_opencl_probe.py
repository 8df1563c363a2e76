"""Device discovery, PYOPENCL_CTX, and a clear "unavailable" record without pyopencl/platform."""

import os
import subprocess
import sys

import pytest

import fastnn as fnn


def test_probe_lists_devices_with_capabilities(ocl):
    record = ocl.probe()
    assert record["available"] and record["reason"] == ""
    assert record["devices"] and all("compute units" in d for d in record["devices"])
    assert "float32" in record["dtypes"]
    opencl = next(r for r in fnn.backends() if r.name == "opencl")
    assert opencl.available and opencl.devices == record["devices"]


def test_gpus_come_before_cpus(ocl):
    from fastnn_opencl import discovery

    kinds = [discovery._type_name(d) for d in discovery.list_devices()]
    assert kinds == sorted(kinds, key=discovery._TYPE_RANK.__getitem__)


def test_pyopencl_ctx_selects_and_rejects(ocl, monkeypatch):
    from types import SimpleNamespace as NS

    from fastnn_opencl import discovery

    plat0, plat1 = NS(name="NVIDIA CUDA"), NS(name="Portable Computing Language")
    entries = [(NS(name="H200"), plat0, 0), (NS(name="pthread-Xeon"), plat1, 0),
               (NS(name="cpu-Other"), plat1, 1)]
    for spec, want in [("1:1", 2), ("1", 1), (":other", 2), ("portable:0", 1), ("0", 0)]:
        monkeypatch.setenv("PYOPENCL_CTX", spec)
        assert discovery._from_env(entries) == want, spec
    monkeypatch.setenv("PYOPENCL_CTX", "0:99")
    with pytest.raises(RuntimeError, match="PYOPENCL_CTX='0:99' matches no OpenCL device"):
        discovery._from_env(entries)
    monkeypatch.delenv("PYOPENCL_CTX")
    assert discovery._from_env(entries) is None


def test_unavailable_without_pyopencl_and_import_still_works():
    code = ("import sys; sys.modules['pyopencl'] = None\n"
            "import fastnn_opencl\n"
            "r = fastnn_opencl.probe()\n"
            "assert not r['available'], r\n"
            "assert 'pyopencl is not installed' in r['reason'], r\n"
            "assert 'pip install \"pyopencl[pocl]\"' in r['reason'], r\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_unavailable_without_platform(monkeypatch):
    pytest.importorskip("pyopencl")
    import fastnn_opencl
    from fastnn_opencl import discovery, runtime

    def no_platform():
        raise RuntimeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(runtime, "_devices", None)
    monkeypatch.setattr(discovery, "list_devices", no_platform)
    record = fastnn_opencl.probe()
    assert not record["available"]
    assert "PLATFORM_NOT_FOUND_KHR" in record["reason"] and "pyopencl[pocl]" in record["reason"]


def test_devices_whose_compiler_fails_are_left_out_and_named(monkeypatch):
    """pip's PoCL 3.0 lists a Zen 5 processor, then fails every build: not a usable device."""
    pytest.importorskip("pyopencl")
    import fastnn_opencl
    from fastnn_opencl import discovery, runtime

    try:
        discovery.list_devices()
    except Exception:
        pytest.skip("no OpenCL platform")
    monkeypatch.setattr(runtime, "_devices", None)
    monkeypatch.setattr(discovery, "unusable", {})
    monkeypatch.setattr(discovery, "compiler_error",
                        lambda device: "error: unknown target CPU 'generic'")
    record = fastnn_opencl.probe()
    assert not record["available"] and not record["devices"]
    assert "no OpenCL device can build kernels" in record["reason"]
    assert "unknown target CPU 'generic'" in record["reason"]
    assert "apt-get install pocl-opencl-icd" in record["reason"]
    assert discovery.unusable and all("unknown target" in e for e in discovery.unusable.values())


def test_listed_devices_build_kernels(ocl):
    from fastnn_opencl import discovery, runtime

    assert all(discovery.compiler_error(d) is None for d in runtime.devices())


def test_float64_refused_clearly_where_the_device_lacks_it(ocl):
    from fastnn_opencl.runtime import state

    dev = state(0)
    saved = dev.fp64
    dev.fp64 = False
    try:
        with pytest.raises(TypeError, match="lacks cl_khr_fp64"):
            dev.empty((2,), "float64")
    finally:
        dev.fp64 = saved


def test_device_strings(ocl):
    with fnn.use("opencl") as device:
        x = fnn.ones((2, 3))
        assert x.device == device and str(device).startswith("opencl")
        assert (x * 2).sum().item() == 12.0
    with pytest.raises(fnn.BackendError, match="does not exist"):
        fnn.use("opencl:99")


def test_group_reduction_kernel(ocl, monkeypatch):
    """The work-group tree reduction that GPUs use, run here by posing as a GPU."""
    import numpy as np
    from fastnn_opencl.runtime import state

    monkeypatch.setattr(state(0), "is_cpu", False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5000)).astype(np.float32)
    for axis in [(1,), (0,), None]:
        for op in ("sum", "max"):
            got = ocl.to_numpy(getattr(ocl, op)(ocl.from_numpy(x, 0), axis, False))
            want = getattr(np, op)(x.astype(np.float64), axis=axis)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
