"""Backend discovery, lazy loading, validation and device selection."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api import registry
from tests.fake_backends import CPU_CLONE, forget, install_backend

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_registry():
    forget()
    yield
    forget()


def test_import_loads_no_backend():
    code = "import sys, fastnn; print([m for m in sys.modules if m.startswith('fastnn_')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_core_never_imports_a_backend_by_name():
    # The NumPy backend is found through its entry point only.
    for path in (REPO / "fastnn").rglob("*.py"):
        text = path.read_text()
        assert "fastnn_cpu" not in text, f"{path} names the NumPy backend's module"


def test_cpu_is_found_through_its_entry_point():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="fastnn.backends")}
    assert eps["cpu"] == "fastnn_cpu"
    record = {b.name: b for b in fnn.backends()}["cpu"]
    assert record.available and record.distribution == "fastnn-backend-cpu"
    assert "float32" in record.dtypes and "float64" in record.dtypes


def test_unknown_backend_names_installed_ones():
    expected = r"unknown backend 'nope'.*installed backends: .*cpu"
    with pytest.raises(fnn.BackendError, match=expected):
        fnn.use("nope")
    with pytest.raises(fnn.BackendError):
        fnn.zeros((2,), device="nope:1")


def test_meta_device_says_fastnn_has_none():
    # the ensembling tutorial moves a copy of its model .to('meta'): no install helps
    for make in (lambda: fnn.empty(2, device="meta"), lambda: fnn.nn.Linear(2, 2).to("meta")):
        with pytest.raises(fnn.BackendError, match="'meta' is PyTorch's device of shapes "
                                                   "without data.*fastnn has none"):
            make()


@pytest.mark.parametrize("name, command", [
    ("opencl", 'pip install -e "backends/opencl[pocl]"'),
    ("cuda", 'pip install -e "backends/cuda_cupy[cuda12]"'),
    ("nope", "pip install -e backends/cpu_numpy"),
])
def test_unknown_backend_hint_is_a_real_command(name, command, monkeypatch):
    """The hint printed `pip install -e backends/<dir>`, a placeholder."""
    monkeypatch.setattr(registry, "_discover", lambda: {})
    with pytest.raises(fnn.BackendError) as error:
        registry._load(name)
    assert command in str(error.value) and "<dir>" not in str(error.value)


def test_broken_backend_is_listed_with_its_reason(tmp_path):
    install_backend(tmp_path, "broken-backend", "broken", "broken_mod",
                    "import not_a_real_package_xyz\n")
    record = {b.name: b for b in fnn.backends()}["broken"]
    assert not record.available
    assert "not_a_real_package_xyz" in record.reason
    with pytest.raises(fnn.BackendError, match="not_a_real_package_xyz"):
        fnn.use("broken")
    assert fnn.get_device() == "cpu"  # never a silent fallback, never a changed default


def test_unavailable_backend_reports_probe_reason(tmp_path):
    install_backend(tmp_path, "nodrv-backend", "nodrv", "nodrv_mod", """
        from fastnn.api.hookspec import hookimpl

        @hookimpl
        def backend_probe():
            return {"available": False, "reason": "no driver; pip install nodrv[gpu]"}
    """)
    with pytest.raises(fnn.BackendError, match=r"nodrv.*no driver; pip install nodrv\[gpu\]"):
        fnn.tensor([1.0], device="nodrv")


def test_missing_primitive_names_backend_and_primitive(tmp_path):
    install_backend(tmp_path, "tiny-backend", "tiny", "tiny_mod", """
        import numpy as np
        from fastnn.api.hookspec import hookimpl

        @hookimpl
        def backend_probe():
            return {"available": True, "devices": ["tiny"], "dtypes": ["float32"]}

        @hookimpl
        def from_numpy(array, device_index):
            return np.array(array)

        @hookimpl
        def exp(x):
            return np.exp(x)
    """)
    x = fnn.tensor([1.0, 2.0], device="tiny")
    np.testing.assert_allclose(x.exp()._data, np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(NotImplementedError, match=r"backend 'tiny'.*primitive 'tanh'"):
        x.tanh()
    # a fused hook the backend lacks falls back to the composite, built on primitives
    with pytest.raises(NotImplementedError, match="primitive '(max|sub|exp)'"):
        fnn.functional.softmax(x, -1)


def test_hook_with_wrong_parameters_is_rejected(tmp_path):
    install_backend(tmp_path, "bad-sig", "badsig", "badsig_mod", """
        import numpy as np
        from fastnn.api.hookspec import hookimpl

        @hookimpl
        def backend_probe():
            return {"available": True}

        @hookimpl
        def add(b, a):
            return a + b
    """)
    record = {b.name: b for b in fnn.backends()}["badsig"]
    assert not record.available and "'add'" in record.reason and "order" in record.reason


def test_unknown_hook_name_is_rejected(tmp_path):
    install_backend(tmp_path, "typo-backend", "typo", "typo_mod", """
        from fastnn.api.hookspec import hookimpl

        @hookimpl
        def backend_probe():
            return {"available": True}

        @hookimpl
        def matmull(a, b):
            return a @ b
    """)
    record = {b.name: b for b in fnn.backends()}["typo"]
    assert not record.available and "matmull" in record.reason


def test_device_strings_and_use(tmp_path):
    install_backend(tmp_path, "clone-backend", "clone", "clone_mod", CPU_CLONE)
    assert str(fnn.get_device()) == "cpu"
    with fnn.use("clone:1") as dev:
        assert dev.index == 1 and str(dev) == "clone:1"
        x = fnn.ones((2,))
        assert x.device == "clone:1" and x.device.index == 1
    assert fnn.get_device() == "cpu"
    with pytest.raises(fnn.BackendError, match=r"clone:5 does not exist.*2 device"):
        fnn.use("clone:5")
    with pytest.raises(ValueError, match="bad device string"):
        fnn.use("clone:x")
    fnn.use("clone")
    try:
        assert fnn.zeros(3).device == "clone"
    finally:
        fnn.use("cpu")


def test_mixing_devices_raises_and_to_moves_with_gradients(tmp_path):
    install_backend(tmp_path, "clone-backend", "clone", "clone_mod", CPU_CLONE)
    a = fnn.tensor([1.0, 2.0], requires_grad=True)
    b = fnn.tensor([3.0, 4.0], device="clone")
    with pytest.raises(fnn.DeviceMismatchError, match=r"cpu.*clone"):
        a + b
    with pytest.raises(fnn.DeviceMismatchError):
        a @ b
    moved = a.to("clone")
    assert moved.device == "clone" and moved.dtype == fnn.float32
    (moved * b).sum().backward()
    assert a.grad.device == "cpu"
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])


def test_pluggy_hooks_dispatch_to_resolved_functions():
    ops = fnn.get_device().ops
    import fastnn_cpu

    assert ops.matmul is fastnn_cpu.matmul  # no wrapper on the hot path
    assert registry.get_backend("cpu").implemented >= set(registry.hookspec.PRIMITIVES)


def test_refresh_forgets_parsed_devices():
    from fastnn.api.device import as_device

    before = as_device("cpu")
    registry.refresh()
    after = as_device("cpu")
    assert after is not before and after.backend is registry.get_backend("cpu")


def test_every_spelling_of_a_device_is_one_object():
    """A tensor pickled on opencl:0 of a 2-device backend came back on another Device object
    (the cache was keyed by spelling), and tensors compare devices by identity."""
    import pickle

    from fastnn.api.device import as_device, parsed_devices

    assert as_device("cpu") is as_device("cpu:0") is pickle.loads(pickle.dumps(as_device("cpu")))
    assert len([d for d in parsed_devices() if d.type == "cpu" and d.index == 0]) == 1


def test_set_and_get_default_device_as_pytorchs(monkeypatch):
    import fastnn as fnn
    from fastnn.api import device

    monkeypatch.delenv("FASTNN_DEVICE", raising=False)
    device.reset_default()
    try:
        assert fnn.get_default_device() == fnn.get_device() == fnn.Device("cpu")
        fnn.set_default_device("cpu:0")
        assert fnn.ones(2).device == fnn.Device("cpu")
        with fnn.use("cpu"):
            fnn.set_default_device(None)  # inside a block: that block's device
            assert fnn.get_default_device() == fnn.Device("cpu")
        fnn.set_default_device(None)
        assert fnn.get_default_device() == fnn.Device("cpu")
        with pytest.raises(fnn.BackendError):
            fnn.set_default_device("no_such_backend")
    finally:
        device.reset_default()


def test_a_device_is_a_context_manager_as_pytorchs(tmp_path):
    """gpt-fast's generate sets up its caches under ``with torch.device(device):``; the
    device object raised TypeError (no context manager protocol)."""
    install_backend(tmp_path, "clone-backend", "clone", "clone_mod", CPU_CLONE)
    spec = fnn.device("clone:1")
    with spec as entered:
        assert entered is spec
        assert fnn.zeros(2).device == "clone:1"
        assert fnn.nn.Linear(2, 3).weight.device == "clone:1"
        with fnn.device("cpu"):
            assert fnn.ones(1).device == "cpu"
        assert fnn.ones(1).device == "clone:1"
    assert fnn.get_device() == "cpu"
    with pytest.raises(fnn.BackendError, match="meta"):
        with fnn.device("meta"):
            pass
    assert fnn.get_device() == "cpu"


def test_registry_kept_gives_tensors_made_before_their_device_back():
    from tests.conftest import registry_kept

    before = fnn.tensor([1.0, 2.0])
    with registry_kept():
        forget()
        assert fnn.ones(2).device is not before.device  # a new Device object meanwhile
    assert fnn.ones(2).device is before.device
    np.testing.assert_array_equal((before + fnn.ones(2)).numpy(), [2.0, 3.0])
