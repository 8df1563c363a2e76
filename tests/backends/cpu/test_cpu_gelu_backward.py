"""The cpu backend's gelu_backward (cdf recovered as out / x) against a float64 reference and
the composite it replaces, on edges and non-contiguous inputs."""

import math

import numpy as np
import pytest

pytest.importorskip("fastnn_cpu")
erf = pytest.importorskip("scipy.special").erf


def _ops():
    from fastnn.api import registry

    return registry.get_backend("cpu").ops


def _reference(x, grad):
    x = x.astype(np.float64)
    return grad * (0.5 * (1.0 + erf(x / math.sqrt(2.0)))
                   + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float64, 1e-14),
                                       (np.float16, 2e-2)])
def test_gelu_backward_matches_float64(dtype, tol):
    from fastnn_cpu import fused

    from fastnn.api import composite

    ops = _ops()
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((37, 41)) * 4).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    x[0, :8] = [0.0, -0.0, tiny, -tiny, 1e-3, -9.0, 9.0, -30.0]
    x = x[:, ::2]  # non-contiguous
    grad = rng.standard_normal(x.shape).astype(dtype)
    got = fused.gelu_backward(x, ops.gelu(x), grad)
    assert got.dtype == dtype and got.shape == x.shape
    ref = _reference(x, grad.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    old = composite.activation_grad(ops, "gelu", x, ops.gelu(x), grad)
    np.testing.assert_allclose(got, old, rtol=tol, atol=tol)
    # at 0 and subnormal x the derivative is exactly 0.5
    np.testing.assert_array_equal(got[0, :2], grad[0, :2] * dtype(0.5))


def test_gelu_backward_non_finite_as_the_composite():
    from fastnn_cpu import fused

    from fastnn.api import composite

    ops = _ops()
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    grad = np.ones_like(x)
    with np.errstate(invalid="ignore"):
        got = fused.gelu_backward(x, ops.gelu(x), grad)
        old = composite.activation_grad(ops, "gelu", x, ops.gelu(x), grad)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(old))
    assert np.isnan(got[:3]).all() and np.isfinite(got[3])


def test_gelu_gradient_through_the_tape_uses_the_hook():
    torch = pytest.importorskip("torch")
    import fastnn as fnn
    import fastnn.functional as F

    x = np.random.default_rng(2).standard_normal((5, 7)).astype(np.float32) * 3
    t = fnn.tensor(x, requires_grad=True)
    F.gelu(t).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.gelu(tt).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_backward_tiny_x_beside_a_nan(dtype):
    """Tiny |x| is found by the minimum of x**2: a NaN elsewhere in the array must not
    hide it (NaN is not below anything), and an empty array has no minimum."""
    from fastnn_cpu import fused

    ops = _ops()
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([np.nan, 0.0, -0.0, tiny, -tiny, 1e-31, 1.5], dtype)
    grad = np.full_like(x, 2.0)
    with np.errstate(invalid="ignore"):
        got = fused.gelu_backward(x, ops.gelu(x), grad)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:6], np.full(5, 1.0, dtype))
    np.testing.assert_allclose(got[6], _reference(x[6:], grad[6:].astype(np.float64))[0],
                               rtol=2e-6)
    empty = np.zeros((0, 4), dtype)
    assert fused.gelu_backward(empty, empty, empty).shape == (0, 4)
