"""prod, min, amax, amin, var, std, logsumexp, any, all, argmin/argmax, cumsum, norm and
the dim=/axis=, keepdim=/keepdims= spellings, against NumPy float64 and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4, 5))



def _values(result):
    return result.values if isinstance(result, tuple) else result


CASES = [
    ("prod", lambda x, d, k: x.prod(d, keepdim=k), lambda a, d, k: np.prod(a, d, keepdims=k)),
    ("amax", lambda x, d, k: x.amax(dim=d, keepdim=k), lambda a, d, k: a.max(d, keepdims=k)),
    ("amin", lambda x, d, k: fnn.amin(x, d, k), lambda a, d, k: a.min(d, keepdims=k)),
    # min with one int dim is (values, indices), as PyTorch's: compare the values
    ("min", lambda x, d, k: _values(x.min(axis=d, keepdims=k)),
     lambda a, d, k: a.min(d, keepdims=k)),
    ("var", lambda x, d, k: x.var(d, keepdim=k),
     lambda a, d, k: a.var(d, ddof=1, keepdims=k)),
    ("var0", lambda x, d, k: x.var(d, keepdim=k, correction=0),
     lambda a, d, k: a.var(d, keepdims=k)),
    ("std", lambda x, d, k: x.std(d, keepdim=k), lambda a, d, k: a.std(d, ddof=1, keepdims=k)),
    ("logsumexp", lambda x, d, k: x.logsumexp(d, keepdim=k),
     lambda a, d, k: np.log(np.exp(a).sum(d, keepdims=k))),
    ("norm2", lambda x, d, k: x.norm(2, d, keepdim=k),
     lambda a, d, k: np.sqrt((a * a).sum(d, keepdims=k))),
    ("norm1", lambda x, d, k: x.norm(1, dim=d, keepdim=k),
     lambda a, d, k: np.abs(a).sum(d, keepdims=k)),
    ("norm3", lambda x, d, k: x.norm(3, dim=d, keepdim=k),
     lambda a, d, k: (np.abs(a) ** 3).sum(d, keepdims=k) ** (1 / 3)),
    ("norminf", lambda x, d, k: x.norm(float("inf"), dim=d, keepdim=k),
     lambda a, d, k: np.abs(a).max(d, keepdims=k)),
]


@pytest.mark.parametrize("name,op,ref", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dim,keep", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_matches_numpy(device, name, op, ref, dim, keep):
    x = fnn.tensor(X, device=device)
    np.testing.assert_allclose(op(x, dim, keep).numpy(), ref(X, dim, keep), rtol=1e-12,
                               atol=1e-13)


@pytest.mark.parametrize("name,op,ref", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_torch(name, op, ref):
    torch = pytest.importorskip("torch")
    x = fnn.tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    tops = {"prod": lambda t: t.prod(1), "amax": lambda t: t.amax(1),
            "amin": lambda t: t.amin(1), "min": lambda t: t.amin(1), "var": lambda t: t.var(1),
            "var0": lambda t: t.var(1, correction=0), "std": lambda t: t.std(1),
            "logsumexp": lambda t: t.logsumexp(1), "norm2": lambda t: t.norm(2, 1),
            "norm1": lambda t: t.norm(1, 1), "norm3": lambda t: t.norm(3, 1),
            "norminf": lambda t: t.norm(float("inf"), 1)}
    w = rng.standard_normal((3, 5))
    (op(x, 1, False) * fnn.tensor(w)).sum().backward()
    (tops[name](t) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_prod_gradient_with_zeros():
    torch = pytest.importorskip("torch")
    a = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 5.0]])
    x, t = fnn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    x.prod(1).sum().backward()
    t.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("call", [
    lambda lib, x: x.std(False), lambda lib, x: x.var(True), lambda lib, x: lib.std(x, False),
    lambda lib, x: lib.var(x, False), lambda lib, x: lib.std_mean(x, False),
    lambda lib, x: lib.var_mean(x, True), lambda lib, x: x.var(0, False, True)])
def test_a_bool_where_dim_goes_is_unbiased_as_pytorchs_overload(call):
    """torch.std(x, False) is PyTorch's overload std(input, unbiased): the population
    spread over every element; it was read as a dim and raised."""
    torch = pytest.importorskip("torch")
    ours, theirs = call(fnn, fnn.tensor(X)), call(torch, torch.tensor(X))
    for mine, want in zip(ours if isinstance(ours, tuple) else (ours,),
                          theirs if isinstance(theirs, tuple) else (theirs,)):
        assert mine.shape == tuple(want.shape)
        np.testing.assert_allclose(mine.numpy(), want.numpy(), rtol=1e-12)


def test_norm_gradient_at_zero_is_zero_as_pytorch():
    x = fnn.zeros((2, 3), dtype=fnn.float64, requires_grad=True)
    x.norm(dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("kwargs", [{}, {"dim": (1, 2)}, {"dim": 1, "keepdim": True}])
def test_norm_p_fro_is_the_2_norm_over_dim_as_pytorchs(kwargs):
    """torch.norm(x, p='fro') (a common spelling): the square root of the sum of squares
    over ``dim`` (all elements without one)."""
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    got = fnn.norm(fnn.tensor(a), p="fro", **kwargs)
    axes = kwargs.get("dim")
    want = np.sqrt((a * a).sum(axis=axes, keepdims=kwargs.get("keepdim", False)))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"dim": (0, 2)}, {"dim": (2, 1), "keepdim": True},
                                    {"dim": (-2, -1)}])
def test_norm_p_nuc_is_the_nuclear_norm_as_pytorchs(kwargs):
    """torch.norm(W, p='nuc') (low-rank penalties): the sum of the singular values of the
    planes of the two dims, a matrix's own without a dim; it raised."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((2, 3, 4) if kwargs else (3, 4))
    x, t = fnn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = fnn.norm(x, p="nuc", **kwargs), torch.norm(t, p="nuc", **kwargs)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="2 dims"):
        fnn.tensor(np.zeros((2, 3, 4))).norm(p="nuc")


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.nuclear_norm(x), lambda lib, x: lib.nuclear_norm(x, True),
    lambda lib, x: lib.nuclear_norm(x, dim=(0, 2), keepdim=True),
    lambda lib, x: lib.frobenius_norm(x, dim=(1, 2)), lambda lib, x: lib.frobenius_norm(x, 2, True),
    lambda lib, x: lib.adjoint(x)])
def test_the_older_matrix_norm_names_as_pytorchs(call):
    """torch.nuclear_norm, torch.frobenius_norm and torch.adjoint (older scripts' names,
    still PyTorch's) were missing."""
    torch = pytest.importorskip("torch")
    x, t = fnn.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    ours, theirs = call(fnn, x), call(torch, t)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_logsumexp_is_stable(device):
    a = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 0.0], [-1000.0, 3.0]])
    out = fnn.tensor(a, device=device).logsumexp(1).numpy()
    np.testing.assert_allclose(out, [1000 + np.log(2), -np.inf, np.inf, 3.0], rtol=1e-12)


def test_any_all(device):
    a = np.array([[0, 1, 0], [0, 0, 0]])
    x = fnn.tensor(a, device=device)
    assert x.any().item() is True and x.all().item() is False
    np.testing.assert_array_equal(x.any(1).numpy(), [True, False])
    np.testing.assert_array_equal((x == 0).all(dim=0).numpy(), [True, False, True])
    assert fnn.zeros((0, 2), device=device).any().item() is False
    assert fnn.zeros((0, 2), device=device).all().item() is True


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "std", "var", "nansum",
                                  "nanmean", "norm", "logsumexp", "any", "all"])
@pytest.mark.parametrize("keep", [False, True])
def test_an_empty_dim_tuple_as_torch(name, keep):
    """x.sum(dim=()) (dims built in a loop, left empty) reduces every axis in PyTorch, and
    any/all reduce none; it reduced none everywhere (a silent no-op sum)."""
    torch = pytest.importorskip("torch")
    if name == "logsumexp" and not keep:
        pytest.skip("torch 2.13's logsumexp(dim=()) fails on its own output shape")
    a = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, 4.0]])
    ours = getattr(fnn.tensor(a), name)(dim=(), keepdim=keep)
    theirs = getattr(torch.tensor(a), name)(dim=(), keepdim=keep)
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fill", [False, True])
def test_max_and_min_of_bool_tensors(device, fill):
    # issue 25: on opencl the max of an all-False bool tensor was True (its start value)
    x = fnn.full((2, 3), fill, dtype=fnn.bool, device=device)
    for result in (x.max(), x.amax(), x.min(), x.amin(), x.amax(1), x.max(1).values,
                   x.amin(0)):
        assert result.dtype is fnn.bool
        np.testing.assert_array_equal(result.numpy(), np.full(result.shape, fill))
    mixed = fnn.tensor([[False, True, False], [False, False, False]], device=device)
    np.testing.assert_array_equal(mixed.amax(1).numpy(), [True, False])  # as torch


def test_argmax_argmin_index_the_flattened_tensor(device):
    x = fnn.tensor(X, device=device)
    assert x.argmax().item() == int(np.argmax(X))  # was one index per row
    assert x.argmin().item() == int(np.argmin(X))
    np.testing.assert_array_equal(x.argmin(dim=1).numpy(), X.argmin(1))
    assert x.argmax(1, keepdim=True).shape == (3, 1, 5)


def test_cumsum(device):
    x = fnn.tensor(X, device=device, requires_grad=True)
    np.testing.assert_allclose(x.cumsum(1).numpy(), np.cumsum(X, 1), rtol=1e-12)
    x.cumsum(dim=-1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to([5, 4, 3, 2, 1], X.shape))
    assert fnn.tensor([True, True]).cumsum(0).tolist() == [1, 2]


def test_softmax_of_0d_and_of_empty(device):
    assert fnn.tensor(3.0, device=device).softmax(0).item() == 1.0
    assert fnn.tensor(3.0, device=device).log_softmax(-1).item() == 0.0
    assert fnn.zeros((2, 0), device=device).softmax(dim=-1).shape == (2, 0)


def test_both_spellings_is_an_error():
    x = fnn.tensor(X)
    with pytest.raises(TypeError, match="both dim= and axis="):
        x.sum(dim=0, axis=0)
    with pytest.raises(TypeError, match="both keepdim= and keepdims="):
        x.mean(0, keepdim=True, keepdims=True)
    assert x.sum(axis=1, keepdims=True).shape == (3, 1, 5)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_min_of_the_dtype_minimum(device, dtype):
    """amin was -max(-x), and -x of the dtype's minimum wraps to itself."""
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    host = np.array([[0, low, 5], [high, 3, low + 1]], dtype=dtype)
    x = fnn.tensor(host, device=device)
    assert x.min().item() == low
    assert x.argmin().item() == 1
    np.testing.assert_array_equal(x.amin(1).numpy(), host.min(1))
    np.testing.assert_array_equal(x.min(1).indices.numpy(), host.argmin(1))
    np.testing.assert_array_equal(x.argmin(0).numpy(), host.argmin(0))
    values = fnn.tensor([[True, False], [True, True]], device=device).amin(1)
    np.testing.assert_array_equal(values.numpy(), [False, True])
