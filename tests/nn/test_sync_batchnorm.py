"""SyncBatchNorm in one process: BatchNorm's results (torch falls back to batch_norm without
a process group or with one rank), its errors, and convert_sync_batchnorm's tree.
Two ranks: tests/distributed/test_sync_batchnorm_mpi.py."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributed as dist
from fastnn import nn
from fastnn.distributed import process_group

BN = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}


@pytest.fixture
def fresh(monkeypatch):
    """No default process group before the test, whatever the test leaves after it."""
    for name in ("WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(process_group, "_DEFAULT", None)


def _pair(cls, **kwargs):
    rng = np.random.default_rng(0)
    layers = [cls(3, dtype=fnn.float64, **kwargs), nn.SyncBatchNorm(3, dtype=fnn.float64,
                                                                     **kwargs)]
    if layers[0].affine:
        weight, bias = rng.normal(size=3), rng.normal(size=3)
        for layer in layers:
            layer.load_state_dict({**layer.state_dict(), "weight": weight, "bias": bias})
    return layers


def _steps(layer, shape, steps=3):
    """``steps`` training passes (output, x.grad, parameter grads, buffers each), then eval."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(steps):
        x = fnn.tensor(rng.normal(1.5, 2.0, shape), requires_grad=True)
        y = layer(x)
        (y * fnn.tensor(rng.normal(size=shape))).sum().backward()
        out += [y.detach().numpy(), x.grad.numpy()]
        out += [p.grad.numpy().copy() for p in layer.parameters()]
        out += [np.array(b) for b in layer.state_dict().values()]
        layer.zero_grad()
    layer.eval()
    out.append(layer(fnn.tensor(rng.normal(size=shape))).numpy())
    return out


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 3, 2, 4), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False},
                                    {"track_running_stats": False}])
@pytest.mark.parametrize("with_group", [False, True])
def test_one_process_equals_batchnorm(fresh, shape, kwargs, with_group):
    if with_group:  # a process group of one rank: no synchronisation, as torch
        dist.init_process_group("gloo")
    ours, sync = _pair(BN[len(shape)], **kwargs)
    for want, got in zip(_steps(ours, shape), _steps(sync, shape), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_matches_torch_sync_batchnorm_without_a_process_group(fresh):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3, 2, 5))
    theirs = torch.nn.SyncBatchNorm(3, momentum=0.2).double()
    ours = nn.SyncBatchNorm(3, momentum=0.2, dtype=fnn.float64)
    tx = torch.tensor(x, requires_grad=True)
    fx = fnn.tensor(x, requires_grad=True)
    g = rng.normal(size=x.shape)
    (theirs(tx) * torch.tensor(g)).sum().backward()
    (ours(fx) * fnn.tensor(g)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-10)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(np.array(ours.state_dict()[key]), value.numpy(),
                                   rtol=1e-12, err_msg=key)


def test_bad_inputs_are_clear_errors():
    layer = nn.SyncBatchNorm(3, dtype=fnn.float64)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        layer(fnn.tensor(np.ones(3)))
    with pytest.raises(ValueError, match=r"with 3 channels, got \(2, 4, 5\)"):
        layer(fnn.tensor(np.ones((2, 4, 5))))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        layer(fnn.tensor(np.ones((1, 3))))
    with pytest.raises(TypeError, match="fastnn Tensor"):
        layer(np.ones((2, 3)))


def test_another_process_group_is_refused_in_training(fresh):
    dist.init_process_group("gloo")
    layer = nn.SyncBatchNorm(3, process_group=object(), dtype=fnn.float64)
    with pytest.raises(ValueError, match="one process group"):
        layer(fnn.tensor(np.ones((2, 3))))
    assert nn.SyncBatchNorm(3, process_group=dist.group.WORLD, dtype=fnn.float64)(
        fnn.tensor(np.ones((2, 3)))).shape == (2, 3)


def _net(nn_):
    return nn_.Sequential(nn_.Conv2d(2, 3, 1), nn_.BatchNorm2d(3), nn_.ReLU(),
                          nn_.Sequential(nn_.Flatten(), nn_.Linear(12, 4), nn_.BatchNorm1d(4)),
                          nn_.BatchNorm3d(2, affine=False, track_running_stats=False))


def test_convert_sync_batchnorm_keeps_parameters_buffers_and_mode():
    net = _net(nn)
    net[3][2].eval()
    net[1](fnn.tensor(np.random.default_rng(3).normal(size=(5, 3, 2, 2)), dtype=fnn.float32))
    before = {k: np.array(v) for k, v in net.state_dict().items()}
    params = dict(net.named_parameters())
    buffers = dict(net.named_buffers())
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group=None)
    assert converted is net  # the root is not a batch norm: converted in place
    assert [type(m).__name__ for m in converted.modules()] == [
        "Sequential", "Conv2d", "SyncBatchNorm", "ReLU", "Sequential", "Flatten", "Linear",
        "SyncBatchNorm", "SyncBatchNorm"]
    assert converted[1].training and not converted[3][2].training
    assert converted[4].running_mean is None and converted[4].weight is None
    assert (converted[3][2].num_features, converted[3][2].eps) == (4, 1e-5)
    for name, p in converted.named_parameters():
        assert p is params[name]
    for name, b in converted.named_buffers():
        assert b is buffers[name]
    after = converted.state_dict()
    assert list(after) == list(before)
    for key, value in before.items():
        np.testing.assert_array_equal(np.array(after[key]), value)
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5, momentum=None))
    assert type(single) is nn.SyncBatchNorm and single.momentum is None


def test_convert_sync_batchnorm_tree_matches_torch():
    torch = pytest.importorskip("torch")
    ours = nn.SyncBatchNorm.convert_sync_batchnorm(_net(nn))
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(_net(torch.nn))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [type(m).__name__ for m in ours.modules()] == [
        type(m).__name__ for m in theirs.modules()]
