"""More of PyTorch's Tensor methods: the random fills (exponential_, log_normal_, cauchy_,
geometric_, random_), fill_diagonal_, masked_scatter(_), cuda(), retains_grad, mH/H/
adjoint and the dense-tensor facts, against NumPy references (and PyTorch where it is
installed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn.api.errors import BackendError
from tests.ops.conftest import DEVICES

N = 200_000  # draws per moment check: the bounds below are several standard errors wide


def _draws(dev, name, *args, dtype=fnn.float64):
    fnn.manual_seed(0)
    x = fnn.zeros(N, dtype=dtype, device=dev)
    assert getattr(x, name)(*args) is x  # in place, returns x
    return x.numpy().astype(np.float64)


@pytest.mark.parametrize("dev", DEVICES)
def test_random_fills_follow_their_distributions(dev):
    v = _draws(dev, "exponential_", 2.0)
    assert v.min() >= 0 and abs(v.mean() - 0.5) < 5 * 0.5 / math.sqrt(N)
    assert abs(np.median(v) - math.log(2) / 2) < 0.01
    v = np.log(_draws(dev, "log_normal_", 0.5, 0.25))
    assert abs(v.mean() - 0.5) < 5 * 0.25 / math.sqrt(N) and abs(v.std() - 0.25) < 0.005
    v = _draws(dev, "cauchy_", 1.0, 2.0)  # no mean: its quartiles are median -+ sigma
    assert abs(np.quantile(v, 0.25) + 1.0) < 0.05 and abs(np.quantile(v, 0.75) - 3.0) < 0.05
    v = _draws(dev, "geometric_", 0.3)
    assert v.min() == 1 and np.all(v == np.round(v))
    assert abs(v.mean() - 1 / 0.3) < 5 * math.sqrt(0.7) / 0.3 / math.sqrt(N)
    assert abs(np.mean(v == 1) - 0.3) < 0.005  # P(first trial succeeds)
    v = _draws(dev, "random_", 3, 9)
    assert set(np.unique(v)) == set(range(3, 9))
    counts = np.bincount(v.astype(int) - 3) / N
    assert np.all(np.abs(counts - 1 / 6) < 0.005)


@pytest.mark.parametrize("dev", DEVICES)
def test_integer_fills_and_random_defaults(dev):
    fnn.manual_seed(1)
    ints = fnn.zeros(1000, dtype=fnn.int64, device=dev)
    v = ints.random_(10).numpy()
    assert ints.dtype is fnn.int64 and v.min() >= 0 and v.max() <= 9 and len(set(v)) == 10
    v = fnn.zeros(1000, dtype=fnn.int64, device=dev).geometric_(0.5).numpy()
    assert v.min() >= 1
    v = fnn.zeros(1000, device=dev).random_().numpy()  # float32: [0, 2**24]
    assert v.min() >= 0 and v.max() <= 2**24 and np.all(v == np.round(v)) and v.max() > 2**20


def test_random_fills_refuse_bad_parameters_and_leaves():
    x = fnn.zeros(3)
    with pytest.raises(ValueError, match="lambda > 0"):
        x.exponential_(-1.0)
    with pytest.raises(ValueError, match=r"p to be in \(0, 1\)"):
        x.geometric_(1.5)
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        x.random_(5, 2)
    with pytest.raises(RuntimeError, match="leaf"):
        fnn.zeros(3, requires_grad=True).cauchy_()


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), False), ((7, 3), True),
                                        ((3, 7), True), ((4, 4, 4), False), ((2, 2, 2, 2), True)])
def test_fill_diagonal_matches_numpy(dev, shape, wrap):
    want = np.zeros(shape)
    np.fill_diagonal(want, 5.0, wrap=wrap)
    x = fnn.zeros(*shape, dtype=fnn.float64, device=dev)
    assert x.fill_diagonal_(5.0, wrap=wrap) is x
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize("dev", DEVICES)
def test_fill_diagonal_writes_through_a_transposed_view(dev):
    base = fnn.zeros(4, 3, device=dev)
    base.T.fill_diagonal_(2.0)  # x.T's diagonal is base's
    want = np.zeros((4, 3), np.float32)
    np.fill_diagonal(want, 2.0)
    np.testing.assert_array_equal(base.numpy(), want)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        fnn.zeros(3).fill_diagonal_(1.0)
    with pytest.raises(RuntimeError, match="equal length"):
        fnn.zeros(2, 3, 3).fill_diagonal_(1.0)


def _masked_scatter_reference(x, mask, source):
    out = x.copy()
    out[np.broadcast_to(mask, x.shape)] = source.reshape(-1)[:np.broadcast_to(mask, x.shape)
                                                            .sum()]
    return out


@pytest.mark.parametrize("dev", DEVICES)
def test_masked_scatter_values_and_gradients(dev):
    rng = np.random.default_rng(0)
    x, source = rng.normal(size=(3, 4)), rng.normal(size=15)
    mask = rng.random(4) > 0.4  # broadcast over the rows
    weights = rng.normal(size=(3, 4))
    a = fnn.tensor(x, device=dev, requires_grad=True)
    s = fnn.tensor(source, device=dev, requires_grad=True)
    out = a.masked_scatter(fnn.tensor(mask, device=dev), s)
    np.testing.assert_allclose(out.detach().numpy(), _masked_scatter_reference(x, mask, source))
    (out * fnn.tensor(weights, device=dev)).sum().backward()
    full = np.broadcast_to(mask, x.shape)
    np.testing.assert_allclose(a.grad.numpy(), np.where(full, 0.0, weights))
    used = np.zeros(15)
    used[:full.sum()] = weights[full]
    np.testing.assert_allclose(s.grad.numpy(), used)
    view = fnn.tensor(x, device=dev)
    alias = view[1]
    view.masked_scatter_(fnn.tensor(mask, device=dev), fnn.tensor(source, device=dev))
    np.testing.assert_allclose(alias.numpy(), _masked_scatter_reference(x, mask, source)[1])


def test_masked_scatter_refuses_bad_input():
    x = fnn.zeros(2, 3)
    with pytest.raises(RuntimeError, match="at least 4 elements"):
        x.masked_scatter(fnn.tensor([[True, True, False], [True, True, False]]), fnn.zeros(3))
    with pytest.raises(TypeError, match="same dtypes"):
        x.masked_scatter(fnn.ones(2, 3, dtype=fnn.bool), fnn.zeros(6, dtype=fnn.float64))
    with pytest.raises(TypeError, match="bool tensor"):
        x.masked_scatter(fnn.ones(2, 3), fnn.zeros(6))


def test_masked_scatter_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, source, mask = rng.normal(size=(2, 3, 4)), rng.normal(size=30), rng.random((3, 1)) > 0.5
    theirs = torch.tensor(x).masked_scatter(torch.tensor(mask), torch.tensor(source))
    ours = fnn.tensor(x).masked_scatter(fnn.tensor(mask), fnn.tensor(source))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_facts_and_conjugate_transposes_are_pytorchs():
    x = fnn.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x * 2
    assert not x.retains_grad and not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    assert not (x.is_sparse or x.is_quantized or x.is_meta)
    np.testing.assert_array_equal(x.H.detach().numpy(), x.detach().numpy().T)
    batch = fnn.zeros(4, 2, 3)
    assert batch.mH.shape == (4, 3, 2) and batch.adjoint().shape == (4, 3, 2)
    scalar = fnn.tensor(1.0)
    assert scalar.H is scalar
    with pytest.raises(RuntimeError, match=r"only supported on matrices \(2-D tensors\)"):
        _ = batch.H
    with pytest.raises(RuntimeError, match="matrices or batches of matrices"):
        _ = fnn.zeros(3).mH


def test_pinned_shared_and_conjugate_spellings_of_a_real_host_tensor():
    """x.pin_memory(), share_memory_(), conj(), conj_physical() and x.real give x itself
    (a real tensor in fastnn's host arrays, as PyTorch's answer for a real dense CPU
    tensor in values), is_pinned() and is_shared() False: code calling them runs."""
    x = fnn.tensor(np.arange(3.0), requires_grad=True)
    for same in (x.pin_memory(), x.share_memory_(), x.conj(), x.conj_physical(), x.real,
                 fnn.conj(x)):
        assert same is x
    assert x.is_pinned() is False and x.is_shared() is False
    loaded = x.pin_memory().to("cpu", non_blocking=True)
    np.testing.assert_array_equal(loaded.detach().numpy(), [0.0, 1.0, 2.0])


def test_cuda_moves_as_to_does():
    x = fnn.zeros(2)
    try:
        usable = fnn.cuda.is_available()
    except Exception:  # noqa: BLE001
        usable = False
    if usable:
        assert x.cuda().device.type == "cuda" and x.cuda(0).device.index == 0
        return
    with pytest.raises(BackendError, match="cuda"):
        x.cuda()


IN_PLACE = [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
            ("selu_", ()), ("celu_", (1.5,)), ("threshold_", (0.1, 9.0)), ("rrelu_", ())]


@pytest.mark.parametrize("name,args", IN_PLACE)
def test_functional_in_place_activations_write_x(name, args):
    import fastnn.functional as F

    a = np.linspace(-2, 2, 9)
    x = fnn.tensor(a)
    row = x.view(3, 3)[1]  # a view sees the write
    want = getattr(F, name[:-1])(fnn.tensor(a), *args).numpy()
    assert getattr(F, name)(x, *args) is x
    np.testing.assert_allclose(x.numpy(), want)
    np.testing.assert_allclose(row.numpy(), want[3:6])
    torch = pytest.importorskip("torch")
    theirs = torch.tensor(a)
    getattr(torch.nn.functional, name)(theirs, *args)
    np.testing.assert_allclose(x.numpy(), theirs.numpy(), rtol=1e-12)
