"""`import fastnn as torch`: the module layout, dtype aliases and device specs a PyTorch
script reaches in its first lines."""

import importlib
import subprocess
import sys

import numpy as np
import pytest

import fastnn as fnn


def test_nn_functional_is_the_functional_module():
    import fastnn.nn.functional as F_nn

    assert F_nn is fnn.functional is fnn.nn.functional
    assert importlib.import_module("fastnn.nn.functional") is fnn.functional
    from fastnn.nn.functional import relu

    assert relu is fnn.functional.relu


def test_utils_data_is_the_data_module():
    import fastnn.utils.data as data
    from fastnn.utils.data import DataLoader, TensorDataset

    assert data is fnn.data is fnn.utils.data
    loader = DataLoader(TensorDataset(fnn.arange(6), fnn.arange(6) * 2), batch_size=4)
    first, doubled = next(iter(loader))
    assert first.tolist() == [0, 1, 2, 3] and doubled.tolist() == [0, 2, 4, 6]


def test_utils_data_submodules_are_the_data_modules():
    # minGPT's trainer: `from torch.utils.data.dataloader import DataLoader`; importing a
    # submodule by PyTorch's path must give fastnn's own module, not a second copy whose
    # classes fail isinstance checks against fnn.data's
    import fastnn.utils.data.dataset as dataset
    import fastnn.utils.data.sampler as sampler
    from fastnn.utils.data.dataloader import DataLoader

    assert DataLoader is fnn.data.DataLoader
    assert sampler.RandomSampler is fnn.data.RandomSampler
    assert dataset.TensorDataset is fnn.data.TensorDataset
    for name in ("dataloader", "sampler", "dataset", "distributed"):
        assert sys.modules["fastnn.utils.data." + name] is getattr(fnn.data, name)
    pytest.importorskip("torch")
    for name, names in (("dataloader", ["DataLoader", "default_collate", "get_worker_info"]),
                        ("sampler", ["RandomSampler", "BatchSampler", "SequentialSampler"]),
                        ("dataset", ["Dataset", "TensorDataset", "random_split"])):
        theirs = importlib.import_module("torch.utils.data." + name)
        ours = importlib.import_module("fastnn.utils.data." + name)
        assert all(hasattr(theirs, n) and hasattr(ours, n) for n in names), name


def test_nn_utils_clips_gradients():
    from fastnn.nn.utils import clip_grad_norm_, clip_grad_value_

    assert clip_grad_norm_ is fnn.optim.clip_grad_norm_
    assert clip_grad_value_ is fnn.optim.clip_grad_value_
    p = fnn.tensor([3.0, 4.0], requires_grad=True)
    (p * p).sum().backward()  # grad (6, 8), norm 10
    assert float(fnn.nn.utils.clip_grad_norm_([p], 5.0)) == pytest.approx(10.0)
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0], rtol=1e-5)


def test_a_fresh_import_as_torch_gets_past_the_first_lines():
    script = (
        "import fastnn as torch\n"
        "import fastnn.nn as nn\n"
        "import fastnn.nn.functional as F\n"
        "from fastnn.utils.data import DataLoader, TensorDataset\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.randn(8, 3, dtype=torch.float).to(device)\n"
        "print(F.relu(nn.Linear(3, 2).to(device)(x)).shape)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(8, 2)"


def _cuda_usable():
    return any(r.name == "cuda" and r.available for r in fnn.backends())


def test_cuda_availability_follows_the_backend_record():
    assert fnn.cuda.is_available() is _cuda_usable()
    records = [r for r in fnn.backends() if r.name == "cuda" and r.available]
    assert fnn.cuda.device_count() == (len(records[0].devices) if records else 0)


def test_accelerator_is_a_usable_device_backend(monkeypatch):
    records = [r for r in fnn.backends() if r.available and not r.host_memory]
    found = fnn.accelerator.current_accelerator()
    assert fnn.accelerator.is_available() is bool(records)
    if records:
        assert found == records[0].name and isinstance(found, fnn.Device)
        assert fnn.accelerator.device_count() == len(records[0].devices)
        with fnn.use(records[-1].name):  # the current default, when it is an accelerator
            assert fnn.accelerator.current_accelerator() == records[-1].name
    else:
        assert found is None and fnn.accelerator.device_count() == 0


def test_dtype_aliases_as_torch():
    torch = pytest.importorskip("torch")
    for name in ("float", "double", "half", "long", "int", "short", "bool", "uint8", "int8",
                 "int16"):
        assert getattr(fnn, name).name == str(getattr(torch, name)).split(".")[1], name


def test_constants_as_torch():
    torch = pytest.importorskip("torch")
    for name in ("pi", "e", "inf"):
        assert type(getattr(fnn, name)) is float and getattr(fnn, name) == getattr(torch, name)
    assert np.isnan(fnn.nan) and fnn.newaxis is torch.newaxis is None
    assert fnn.zeros(2, 3)[:, fnn.newaxis].shape == (2, 1, 3)


def test_device_spec_compares_with_devices_and_strings():
    torch = pytest.importorskip("torch")
    for spec in ("cuda:1", "cpu", "opencl:0"):
        ours, theirs = fnn.device(spec), torch.device(spec)
        assert (ours.type, ours.index) == (theirs.type, theirs.index)
        assert str(ours) == str(theirs)
    assert fnn.device("cuda", 1) == "cuda:1" == fnn.device("cuda:1")
    assert fnn.device("cpu") == fnn.zeros(1).device == "cpu"
    assert fnn.zeros(1).device == fnn.device("cpu")
    assert hash(fnn.device("cpu")) == hash(fnn.device("cpu:0"))
    assert repr(fnn.device("cuda", 1)) == "device(type='cuda', index=1)"
    # a tensor's device prints as PyTorch's too (it printed device('cpu'))
    assert repr(fnn.zeros(1).device) == repr(torch.zeros(1).device) == "device(type='cpu')"
    assert repr([fnn.zeros(1).device]) == repr([torch.zeros(1).device])
    assert fnn.zeros(2, device=fnn.device("cpu")).device == "cpu"
    assert fnn.zeros(2).to(fnn.device("cpu")).device == "cpu"
    with pytest.raises(ValueError, match="device: bad device string 'cuda:x'"):
        fnn.device("cuda:x")
    with pytest.raises(TypeError, match="device: expected a string"):
        fnn.device(3.0)
    with pytest.raises(ValueError, match="already names index 1"):
        fnn.device("cuda:1", 2)
    with pytest.raises(fnn.BackendError, match="unknown backend 'nosuch'"):
        fnn.zeros(1, device=fnn.device("nosuch"))


def test_hook_handles_share_pytorchs_one_type():
    from fastnn.utils.hooks import RemovableHandle

    layer = fnn.nn.Linear(2, 2)
    x = fnn.ones(2, requires_grad=True)
    opt = fnn.optim.SGD(layer.parameters(), lr=0.1)
    handles = [layer.register_forward_hook(lambda *a: None), x.register_hook(lambda g: g * 2),
               opt.register_step_post_hook(lambda *a: None)]
    assert all(isinstance(h, RemovableHandle) for h in handles)
    handles[1].remove()  # the tensor's hook is gone: the gradient is not doubled
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_data_submodules_as_pytorchs():
    from fastnn.utils.data.dataloader import DataLoader, default_collate, get_worker_info
    from fastnn.utils.data.dataset import Subset, random_split  # noqa: F401
    from fastnn.utils.data.sampler import WeightedRandomSampler  # noqa: F401

    assert DataLoader is fnn.data.DataLoader and get_worker_info() is None
    batch = default_collate([(fnn.tensor([1.0]), 2), (fnn.tensor([3.0]), 4)])
    assert batch[0].tolist() == [[1.0], [3.0]] and batch[1].tolist() == [2, 4]


def _warmup_rates(lib, base):
    class Warmup(base):  # a custom scheduler written for PyTorch
        def __init__(self, optimizer, steps, last_epoch=-1):
            self.steps = steps
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            factor = min(1.0, (self.last_epoch + 1) / self.steps)
            return [rate * factor for rate in self.base_lrs]

    opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.1)
    schedule, rates = Warmup(opt, 4), []
    for _ in range(6):
        opt.step()
        schedule.step()
        rates.append(round(opt.param_groups[0]["lr"], 9))
    return rates


def test_custom_scheduler_on_the_old_base_name():
    from fastnn.optim.lr_scheduler import LRScheduler, _LRScheduler

    assert issubclass(_LRScheduler, LRScheduler)
    assert _warmup_rates(fnn, _LRScheduler) == [0.05, 0.075, 0.1, 0.1, 0.1, 0.1]
    torch = pytest.importorskip("torch")
    assert _warmup_rates(fnn, _LRScheduler) == _warmup_rates(
        torch, torch.optim.lr_scheduler._LRScheduler)


def test_complex_names_say_fastnn_has_no_complex_dtypes():
    """Llama's and gpt-fast's rotary embeddings call torch.polar and view_as_complex: the
    AttributeError now says why and what to write instead."""
    for name in ("polar", "view_as_complex", "complex64", "cfloat"):
        assert not hasattr(fnn, name)
        with pytest.raises(AttributeError, match=f"{name!r}: fastnn has no complex dtypes.*cos"):
            getattr(fnn, name)
    with pytest.raises(AttributeError, match=r"no attribute 'no_such_name'$"):
        _ = fnn.no_such_name


def test_sparse_names_say_fastnn_is_dense_only():
    """torch.sparse_coo_tensor, x.to_sparse() gave bare AttributeErrors; what holds for a
    dense tensor (x.to_dense(), torch.spmm of dense operands, sparse_dim) answers as
    PyTorch's."""
    for name in ("sparse_coo_tensor", "sparse_csr_tensor", "sparse_coo", "hspmm"):
        assert not hasattr(fnn, name)
        with pytest.raises(AttributeError, match=f"{name!r}: .*dense only"):
            getattr(fnn, name)
    x = fnn.tensor([[1.0, 0.0], [2.0, 3.0]])
    for method in ("to_sparse", "to_sparse_csr", "coalesce"):
        with pytest.raises(NotImplementedError, match=f"{method}\\(\\): fastnn's tensors are "
                                                      "dense only"):
            getattr(x, method)()
    torch = pytest.importorskip("torch")
    t = torch.tensor(x.numpy())
    np.testing.assert_array_equal(fnn.spmm(x, x).numpy(), torch.spmm(t, t).numpy())
    assert x.to_dense() is x and t.to_dense() is t
    assert x.to_dense(dtype=fnn.float64).dtype == fnn.float64
    assert (x.sparse_dim(), x.dense_dim()) == (t.sparse_dim(), t.dense_dim())
