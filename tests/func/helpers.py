"""Shared pieces of the fastnn.func tests: test functions written once for either library,
conversions, and a central finite-difference reference that needs no PyTorch."""

import numpy as np

import fastnn as fnn

RNG = np.random.default_rng(7)
X3 = RNG.normal(size=(3,))
Y23 = RNG.normal(size=(2, 3))
B43 = RNG.normal(size=(4, 3))


def ours(value, device="cpu", requires_grad=False):
    return fnn.tensor(value, dtype=fnn.float64, device=device, requires_grad=requires_grad)


def theirs(torch, value, requires_grad=False):
    return torch.tensor(value, dtype=torch.float64, requires_grad=requires_grad)


def to_np(value):
    """Tensors (of either library) in nested tuples/lists/dicts as float64 arrays."""
    if isinstance(value, dict):
        return {k: to_np(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(to_np(v) for v in value)
    if hasattr(value, "detach"):
        return np.asarray(value.detach().cpu().numpy() if hasattr(value, "cpu")
                          else value.detach().numpy(), dtype=np.float64)
    return value


def assert_tree_close(got, want, rtol=1e-10, atol=1e-12):
    got, want = to_np(got), to_np(want)
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want)
        for key in want:
            assert_tree_close(got[key], want[key], rtol, atol)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (type(got), type(want))
        for g, w in zip(got, want):
            assert_tree_close(g, w, rtol, atol)
    else:
        assert np.shape(got) == np.shape(want), (np.shape(got), np.shape(want))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def numeric_jacobian(f, x, eps=1e-6):
    """d f / d x of a NumPy function, by central differences: shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(f(x))
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        jac[(...,) + idx] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac


def vector_fn(lib):
    """R^3 -> R^3, nonlinear in every coordinate."""
    return lambda x: lib.sin(x) * x.sum() + x ** 3


def vector_np(x):
    return np.sin(x) * x.sum() + x ** 3


def scalar_fn(lib):
    """(R^3, R^{2x3}) -> R."""
    return lambda x, y: (lib.sin(x) * (y ** 2).sum(0)).sum() + (x ** 2).sum() * y.mean()
