"""Modules and tensors survive Python's protocols: ``pickle`` and ``copy.deepcopy`` give
objects with the same values on the same (canonical) device, which then compute and train
exactly as the originals."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def _devices():
    out = ["cpu"]
    if any(r.name == "opencl" and r.available for r in fnn.backends()):
        out.append("opencl")
    return out


def _pickled(obj):
    return pickle.loads(pickle.dumps(obj))


COPIES = {"deepcopy": copy.deepcopy, "pickle": _pickled}


def test_deepcopy_of_a_model_with_buffers_runs():
    """It used to raise "tensors are on different devices (cpu and cpu)": the copied Device
    was a second object. Now a copy refers to the canonical device and dtype objects."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    x = fnn.randn((2, 3, 6, 6))
    twin = copy.deepcopy(model)
    np.testing.assert_array_equal(twin(x).numpy(), copy.deepcopy(model)(x).numpy())
    assert twin[1].running_mean.device is model[1].running_mean.device
    assert twin[0].weight.dtype is fnn.float32
    assert copy.deepcopy(fnn.float64) is fnn.float64
    assert copy.deepcopy(x.device) is x.device
    assert _pickled(x.device) is x.device and _pickled(fnn.int64) is fnn.int64


@pytest.mark.parametrize("device", _devices())
def test_a_tensor_pickles_as_values_dtype_device_and_requires_grad(device):
    for t in (fnn.tensor([[1.5, -2.0]], dtype=fnn.float64, device=device, requires_grad=True),
              fnn.tensor([3, 4], device=device), fnn.tensor(True, device=device)):
        back = _pickled(t)
        assert type(back) is fnn.Tensor and back.device is t.device and back.dtype is t.dtype
        assert back.requires_grad == t.requires_grad and back.grad is None and back.is_leaf
        np.testing.assert_array_equal(back.numpy(), t.numpy())
    # a tensor with a history comes back as a leaf with the same values (as PyTorch's)
    y = fnn.tensor([1.0, 2.0], requires_grad=True) * 2
    np.testing.assert_array_equal(_pickled(y).numpy(), [2.0, 4.0])


def test_parameters_keep_their_class_and_sharing():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.Tanh(), shared, nn.Swish(3))
    model[3].beta.requires_grad = False
    model[0].weight.grad = fnn.ones((3, 3))
    for how in COPIES.values():
        twin = how(model)
        assert twin[0] is twin[2] and twin[0].weight is not model[0].weight
        assert [type(p) for p in twin.parameters()] == [nn.Parameter] * 3
        assert [p.param_class for p in twin.parameters()] == ["connective", "bias",
                                                               "activation"]
        assert [p.requires_grad for p in twin.parameters()] == [True, True, False]
        assert twin[0].weight.grad is None  # as PyTorch's Parameter
        for (name, a), (_, b) in zip(model.named_parameters(), twin.named_parameters()):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def _layers():
    return {
        "Linear": (nn.Linear(4, 3), (5, 4)), "Dense": (nn.Dense(4, 3), (5, 4)),
        "RMSNorm": (nn.RMSNorm(4), (5, 4)), "DyT": (nn.DyT(4), (5, 4)),
        "Swish": (nn.Swish(4), (5, 4)), "GatedLinear": (nn.GatedLinear(4, 3), (5, 4)),
        "Conv1d": (nn.Conv1d(2, 3, 3), (2, 2, 7)), "BatchNorm1d": (nn.BatchNorm1d(4), (5, 4)),
        "LayerNorm": (nn.LayerNorm(4), (5, 4)),
        "Residual": (nn.Residual(nn.Sequential(nn.Linear(4, 4), nn.GELU())), (5, 4)),
        "MultiheadAttention": (nn.MultiheadAttention(4, 2, batch_first=True), (2, 3, 4)),
        "TransformerEncoderLayer": (nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0,
                                                               batch_first=True), (2, 3, 4)),
        "LSTM": (nn.LSTM(4, 3, batch_first=True), (2, 3, 4)),
        "GRU": (nn.GRU(4, 3), (3, 2, 4)),
    }


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("name", sorted(_layers()))
def test_every_kind_of_layer_copies_with_the_same_outputs(name, how):
    layer, shape = _layers()[name]
    layer.eval()
    x = fnn.randn(shape)
    if name == "MultiheadAttention":
        def run(m):
            return m(x, x, x)[0]
    elif name in ("LSTM", "GRU"):
        def run(m):
            return m(x)[0]
    else:
        def run(m):
            return m(x)
    twin = COPIES[how](layer)
    assert repr(twin) == repr(layer)
    assert twin.state_dict().keys() == layer.state_dict().keys()
    np.testing.assert_array_equal(run(twin).numpy(), run(layer).numpy())


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_a_copy_trains_on_exactly_as_the_original(opt_name, how):
    """Two copies (model, optimizer and schedule together, taken mid-run so the optimizer
    has state), the same batches, the same steps: the same weights, bit for bit."""
    import fastnn.functional as F
    from fastnn import optim
    from fastnn.optim import lr_scheduler

    fnn.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(2, 4, 3), nn.BatchNorm1d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(20, 3))
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9, weight_decay=1e-3),
              "Adam": dict(lr=0.01, weight_decay=1e-3)}[opt_name]
    opt = getattr(optim, opt_name)(model.parameters(), **kwargs)
    schedule = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    rng = np.random.default_rng(1)
    batches = [(fnn.tensor(rng.standard_normal((6, 2, 7)), dtype=fnn.float32),
                fnn.tensor(rng.integers(0, 3, 6))) for _ in range(6)]

    def train(run, steps):
        m, o, s = run
        for x, y in steps:
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
            s.step()

    run = (model, opt, schedule)
    train(run, batches[:2])
    twin = COPIES[how](run)
    assert twin[1].param_groups[0]["params"][0] is twin[0][0].weight  # still the model's
    train(run, batches[2:])
    train(twin, batches[2:])
    assert twin[2].get_last_lr() == schedule.get_last_lr()
    for (name, a), (_, b) in zip(model.state_dict().items(), twin[0].state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)
