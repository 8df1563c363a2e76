"""cumprod, logcumsumexp, nansum, nanmean, var_mean, std_mean, count_nonzero, histc,
bincount and diff against PyTorch: values, dtypes, gradients (cumprod through zeros),
empty and 0-d tensors, negative dims and non-contiguous views."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
rng = np.random.default_rng(2)


def _same(got, want, rtol=1e-12, atol=1e-12):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w, rtol, atol)
        return
    assert str(want.dtype).replace("torch.", "") == got.dtype.name, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.detach().double().numpy(),
                               rtol=rtol, atol=atol, equal_nan=True)


def _both(host, grad=False):
    return fnn.tensor(host, requires_grad=grad), torch.tensor(host, requires_grad=grad)


@pytest.mark.parametrize("name", ["cumprod", "logcumsumexp"])
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 7), 1), ((3, 7), -2), ((2, 3, 9), -1),
                                        ((), 0), ((0, 4), 1), ((4, 0), 1)])
def test_scans_values_and_gradients(name, shape, dim):
    host = rng.uniform(-2, 2, shape)
    if name == "cumprod" and host.size > 3:
        host.flat[[1, 3]] = 0.0  # zeros, where the gradient needs the product rule
    x, t = _both(host, grad=True)
    out, ref = getattr(fnn, name)(x, dim), getattr(torch, name)(t, dim)
    _same(out, ref, rtol=1e-12)
    if host.size:
        weights = rng.normal(size=shape)
        (out * fnn.tensor(weights)).sum().backward()
        (ref * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_scans_dtypes_edges_and_views(device):
    ints = np.array([[1, 2, 3], [4, 0, -2]])
    for dtype in ("int32", "int64"):
        _same(fnn.tensor(ints.astype(dtype), device=device).cumprod(1),
              torch.tensor(ints.astype(dtype)).cumprod(1))
    _same(fnn.tensor([True, False]).cumprod(0), torch.tensor([True, False]).cumprod(0))
    view = rng.normal(size=(4, 3))
    _same(fnn.tensor(view, device=device).t().cumprod(dim=1), torch.tensor(view).t().cumprod(1))
    edge = np.array([-INF, 0.0, 1000.0, -5.0, INF, NAN])
    _same(fnn.logcumsumexp(fnn.tensor(edge, device=device), 0),
          torch.logcumsumexp(torch.tensor(edge), 0))
    with pytest.raises(TypeError, match="logcumsumexp: defined on floating"):
        fnn.tensor([1, 2]).logcumsumexp(0)
    with pytest.raises(TypeError, match="cumprod: missing dim"):
        fnn.ones(3).cumprod()


def test_nan_reductions_and_moments(device):
    host = rng.normal(size=(3, 4))
    host[0, 1] = host[2, :] = NAN
    x, t = fnn.tensor(host, device=device), torch.tensor(host)
    for kw in ({}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": (0, 1)}):
        _same(fnn.nansum(x, **kw), torch.nansum(t, **kw))
        _same(fnn.nanmean(x, **kw), torch.nanmean(t, **kw))
    _same(fnn.tensor([1, 2], device=device).nansum(), torch.tensor([1, 2]).nansum())
    with pytest.raises(TypeError, match="nanmean: defined on floating"):
        fnn.tensor([1, 2]).nanmean()
    clean = rng.normal(size=(3, 5))
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"correction": 0},
               {"dim": 1, "unbiased": False}, {"dim": (0, 1), "correction": 2}):
        _same(fnn.var_mean(fnn.tensor(clean), **kw), torch.var_mean(torch.tensor(clean), **kw))
        _same(fnn.std_mean(fnn.tensor(clean), **kw), torch.std_mean(torch.tensor(clean), **kw))


def test_count_nonzero_histc_bincount(device):
    host = np.array([[0, 1, 2], [0, 0, 3]])
    for dim in (None, 0, -1, (0, 1)):
        _same(fnn.count_nonzero(fnn.tensor(host, device=device), dim=dim),
              torch.count_nonzero(torch.tensor(host), dim=dim))
    values = np.concatenate([rng.normal(size=50), [NAN, 3.0, -3.0]]).astype(np.float32)
    for kw in ({}, {"bins": 7}, {"bins": 4, "min": -1, "max": 1}, {"bins": 3, "min": 0,
                                                                   "max": 3}):
        finite = values[~np.isnan(values)] if not kw.get("max") else values
        _same(fnn.histc(fnn.tensor(finite, device=device), **kw),
              torch.histc(torch.tensor(finite), **kw))
    _same(fnn.histc(fnn.tensor([2.0, 2.0]), bins=4), torch.histc(torch.tensor([2.0, 2.0]), bins=4))
    counts = np.array([1, 3, 3, 0, 7])
    weights = rng.normal(size=5)
    for kw in ({}, {"minlength": 10}, {"weights": weights.astype(np.float32)},
               {"weights": np.arange(5)}):
        tkw = {k: torch.tensor(v) if k == "weights" else v for k, v in kw.items()}
        fkw = {k: fnn.tensor(v, device=device) if k == "weights" else v for k, v in kw.items()}
        _same(fnn.bincount(fnn.tensor(counts, device=device), **fkw),
              torch.bincount(torch.tensor(counts), **tkw))
    _same(fnn.tensor([], dtype=fnn.int64).bincount(),
          torch.tensor([], dtype=torch.int64).bincount())
    with pytest.raises(ValueError, match="non-negative"):
        fnn.bincount(fnn.tensor([1, -1]))


def test_diff_as_torch():
    host = rng.normal(size=(3, 5))
    x, t = _both(host, grad=True)
    for kw in ({}, {"n": 2}, {"dim": 0}, {"n": 3, "dim": -1}, {"n": 0}, {"n": 7}):
        _same(fnn.diff(x, **kw), torch.diff(t, **kw))
    before, after = rng.normal(size=(3, 2)), rng.normal(size=(3, 1))
    _same(x.diff(prepend=fnn.tensor(before), append=fnn.tensor(after)),
          t.diff(prepend=torch.tensor(before), append=torch.tensor(after)))
    (fnn.diff(x, 2) * fnn.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
    (torch.diff(t, 2) * torch.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    flags = [True, False, False]
    _same(fnn.diff(fnn.tensor(flags)), torch.diff(torch.tensor(flags)))
    column = [[1, 2, 4]]
    _same(fnn.diff(fnn.tensor(column).t(), dim=0), torch.diff(torch.tensor(column).t(), dim=0))
