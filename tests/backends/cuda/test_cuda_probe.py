"""The CUDA backend without a GPU: it loads, says why it is unusable, and never breaks fastnn."""

from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pluggy
import pytest
from fastnn_cuda import _cupy

import fastnn as fnn
from fastnn.api import hookspec, registry

HINT = "backends/cuda_cupy[cuda12]"
HAS_GPU = _cupy.probe()["available"]
no_gpu_only = pytest.mark.skipif(HAS_GPU, reason="a CUDA GPU is present here")


def test_every_hook_of_the_spec_is_implemented():
    import fastnn_cuda

    for name in hookspec.HOOKS + ["backend_probe"]:
        impl = getattr(registry.hook_namespace(fastnn_cuda), name, None)
        assert impl is not None, f"fastnn_cuda lacks the hook {name!r}"
        spec = list(inspect.signature(getattr(hookspec, name)).parameters)
        assert list(inspect.signature(impl).parameters) == spec, name


@no_gpu_only
def test_backends_lists_cuda_unavailable_with_reason_and_hint():
    records = {r.name: r for r in fnn.backends()}
    cuda = records["cuda"]
    assert cuda.available is False
    assert cuda.distribution == "fastnn-backend-cuda"
    assert HINT in cuda.reason
    assert "CUDA" in cuda.reason or "cupy" in cuda.reason
    assert cuda.devices == []


@no_gpu_only
@pytest.mark.parametrize("spec", ["cuda", "cuda:1"])
def test_use_cuda_raises_backend_error_naming_the_reason(spec):
    reason = registry.get_backend("cuda", require=False).record.reason
    with pytest.raises(fnn.BackendError) as info:
        fnn.use(spec)
    assert "'cuda'" in str(info.value) and reason in str(info.value)
    assert str(fnn.get_device()) == "cpu"  # the failed call changed nothing


def test_import_without_cupy_reports_it():
    code = (
        "import sys; sys.modules['cupy'] = None\n"
        "import fastnn_cuda\n"
        "p = fastnn_cuda.backend_probe()\n"
        "print(p['available'], '|', p['reason'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    available, reason = out.strip().split(" | ", 1)
    assert available == "False"
    assert "cupy is not importable" in reason and HINT in reason


def _fake_cupy(get_count):
    runtime = types.SimpleNamespace(getDeviceCount=get_count)
    return types.SimpleNamespace(__version__="0.0", cuda=types.SimpleNamespace(runtime=runtime))


def test_probe_turns_any_driver_failure_into_a_reason(monkeypatch):
    def broken():
        raise OSError("libcuda.so: cannot open shared object file")

    monkeypatch.setattr(_cupy, "cupy", _fake_cupy(broken))
    answer = _cupy.probe()
    assert answer["available"] is False
    assert "OSError: libcuda.so" in answer["reason"] and HINT in answer["reason"]
    assert _cupy.device_count() == 0


def test_probe_reports_zero_devices(monkeypatch):
    monkeypatch.setattr(_cupy, "cupy", _fake_cupy(lambda: 0))
    answer = _cupy.probe()
    assert answer["available"] is False and "0 devices" in answer["reason"]


def test_multi_gpu_wrapper_keeps_signatures_and_markers(monkeypatch):
    import fastnn_cuda

    if _cupy.cupy is None:
        pytest.skip("cupy is not importable, so the device wrapper cannot be built")
    import importlib

    namespace = {name: fn for module in fastnn_cuda.fastnn_hook_modules
                 for name, fn in vars(importlib.import_module(module)).items()
                 if name in fastnn_cuda._ON_ARRAY_DEVICE}
    fastnn_cuda._guard_devices(namespace)
    module = types.ModuleType("wrapped_cuda")
    vars(module).update(namespace)
    pm = pluggy.PluginManager(hookspec.PROJECT)
    pm.add_hookspecs(hookspec)
    pm.register(module, name="wrapped_cuda")
    pm.check_pending()
    registry._check_signatures("wrapped_cuda", pm)  # raises if a parameter list changed
    registered = {name for name in namespace if getattr(pm.hook, name).get_hookimpls()}
    assert registered == set(namespace)


def test_every_hook_on_device_arrays_runs_on_their_gpu():
    """With several GPUs a hook must run on its operands' device: each hook whose first
    argument is a device array is wrapped (a new hook left out ran on the current GPU)."""
    import fastnn_cuda

    from fastnn.api import hookspec

    # the collectives are given their device (device_index) and enter it themselves
    host_side = {"from_numpy", "to_numpy", "full", "uniform", "allreduce", "broadcast"}
    wanted = set(hookspec.HOOKS) - host_side
    assert wanted - set(fastnn_cuda._ON_ARRAY_DEVICE) == set()
    implemented = {name for module in fastnn_cuda.fastnn_hook_modules
                   for name in vars(__import__(module, fromlist=["_"]))}
    assert wanted <= implemented  # and the backend does implement each of them
