"""fastnn_cpu.native's batch normalisation (native_norm.c, used by fastnn_cpu.batchnorm):
forward and backward agree with the NumPy passes they replace and with the float64
formulas, with a large mean, a constant channel, NaN, and on the layouts it leaves to
NumPy (strided x, broadcast gradient)."""

import numpy as np
import pytest
from fastnn_cpu import batchnorm, native

from tests.backends.cpu.native_switch import off

needs_c = pytest.mark.skipif(native.norm_library() is None,
                             reason=f"no C loops here: {native.status()}")


def _numpy(fn):
    with off("_NORM"):
        return fn()


def _reference(x, w, b, g, eps):
    """(out, mean, var, dx, dweight, dbias) in float64, written out."""
    x, w, b, g = (a.astype(np.float64) for a in (x, w, b, g))
    axes = (0,) + tuple(range(2, x.ndim))
    view = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axes), x.var(axes)
    xhat = (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps)
    m = x.size // x.shape[1]
    dbias, dweight = g.sum(axes), (g * xhat).sum(axes)
    dx = (w / np.sqrt(var + eps)).reshape(view) / m * (
        m * g - dbias.reshape(view) - xhat * dweight.reshape(view))
    return xhat * w.reshape(view) + b.reshape(view), mean, var, dx, dweight, dbias


SHAPES = [(32, 16, 32, 32), (3, 5, 7), (1, 2, 3, 4), (4, 3, 1), (2, 3)]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_c_passes_agree_with_numpy_and_the_float64_formulas(shape, dtype, offset):
    rng = np.random.default_rng(len(shape) + int(offset))
    x = (rng.normal(size=shape) * 2 + offset).astype(dtype)
    w, b = (rng.normal(size=shape[1]).astype(dtype) for _ in range(2))
    g = rng.normal(size=shape).astype(dtype)
    out, mean, var = batchnorm.batch_norm_train(x, w, b, 1e-5)
    back = batchnorm.batch_norm_backward(x, w, mean, var, g, 1e-5)
    n_out = _numpy(lambda: batchnorm.batch_norm_train(x, w, b, 1e-5))
    n_back = _numpy(lambda: batchnorm.batch_norm_backward(x, w, mean, var, g, 1e-5))
    _agree(("out", "mean", "var", "dx", "dweight", "dbias"), (out, mean, var) + back,
           n_out + n_back, _reference(x, w, b, g, 1e-5), dtype)


def _agree(names, got_all, numpy_all, ref, dtype, against_numpy=True):
    """Each C result within tolerance of the float64 reference and of the NumPy passes."""
    tol = 2e-5 if dtype == np.float32 else 1e-11
    for name, got, numpy_got, want in zip(names, got_all, numpy_all, ref):
        assert got.dtype == dtype and got.shape == want.shape, name
        # the NumPy passes' own error (large with a large mean over few values: x - mean
        # in the input's precision) is the yardstick: the C passes may be off by twice it
        numpy_error = float(np.abs(numpy_got - want).max())
        size = max(1.0, float(np.abs(want).max()))
        atol = tol * size + 2 * numpy_error
        np.testing.assert_allclose(got, want, rtol=tol, atol=atol,
                                   err_msg=f"{name} against float64")
        if against_numpy:
            np.testing.assert_allclose(got, numpy_got, rtol=tol, atol=atol,
                                       err_msg=f"{name} against NumPy")


@needs_c
def test_a_constant_channel_and_nan():
    x = np.ones((4, 3, 5), np.float32)
    x[:, 1] = np.arange(20, dtype=np.float32).reshape(4, 5)
    x[2, 2, 3] = np.nan
    w, b = np.ones(3, np.float32), np.zeros(3, np.float32)
    out, mean, var = batchnorm.batch_norm_train(x, w, b, 1e-5)
    assert var[0] == 0 and mean[0] == 1 and (out[:, 0] == 0).all()  # constant: 0, not NaN
    assert np.isnan(out[:, 2]).all() and np.isnan(mean[2]) and np.isfinite(out[:, 1]).all()
    g = np.ones_like(x)
    dx, dweight, dbias = batchnorm.batch_norm_backward(x, w, mean, var, g, 1e-5)
    assert np.isnan(dx[:, 2]).all() and np.isfinite(dx[:, :2]).all() and dbias[0] == 20


def test_layouts_left_to_numpy_give_the_same_results():
    """A strided x and a broadcast gradient take NumPy's passes (the C loops read
    contiguous arrays only): the results match the contiguous call's."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 4, 10)).astype(np.float32)
    w, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    strided = np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0)
    want = batchnorm.batch_norm_train(x, w, b, 1e-5)
    got = batchnorm.batch_norm_train(strided, w, b, 1e-5)
    for a, c in zip(got, want):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    g = np.broadcast_to(np.float32(0.5), x.shape)
    got = batchnorm.batch_norm_backward(x, w, want[1], want[2], g, 1e-5)
    again = batchnorm.batch_norm_backward(x, w, want[1], want[2], np.array(g), 1e-5)
    for a, c in zip(got, again):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- layer norm (fastnn_cpu.layernorm)

def _ln_reference(x, w, b, g, eps):
    """(out, mean, rstd, dx, dweight, dbias) of layer norm in float64, written out."""
    x, w, b, g = (a.astype(np.float64) for a in (x, w, b, g))
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    gw = g * w
    dx = rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return xhat * w + b, mean, rstd, dx, (g * xhat).sum(rows), g.sum(rows)


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 64, 64), (3, 7), (5, 1), (1, 300), (2, 3, 4, 9)])
@pytest.mark.parametrize("offset", [0.0, 300.0])
def test_layer_norm_c_passes_agree_with_numpy_and_float64(shape, dtype, offset):
    from fastnn_cpu import layernorm

    rng = np.random.default_rng(len(shape) + int(offset))
    x = (rng.normal(size=shape) * 2 + offset).astype(dtype)
    w, b = (rng.normal(size=shape[-1]).astype(dtype) for _ in range(2))
    g = rng.normal(size=shape).astype(dtype)
    out, mean, rstd = layernorm.layer_norm_train(x, w, b, 1e-5)
    back = layernorm.layer_norm_backward(x, w, mean, rstd, g)
    n_out = _numpy(lambda: layernorm.layer_norm_train(x, w, b, 1e-5))
    n_back = _numpy(lambda: layernorm.layer_norm_backward(x, w, mean, rstd, g))
    _agree(("out", "mean", "rstd", "dx", "dweight", "dbias"), (out, mean, rstd) + back,
           n_out + n_back, _ln_reference(x, w, b, g, 1e-5), dtype, against_numpy=False)


@needs_c
def test_layer_norm_leaves_other_layouts_to_numpy_with_the_same_values():
    from fastnn_cpu import layernorm

    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 32)).astype(np.float32)
    w, b = rng.normal(size=32).astype(np.float32), rng.normal(size=32).astype(np.float32)
    g = rng.normal(size=(6, 32)).astype(np.float32)
    out, mean, rstd = layernorm.layer_norm_train(x, w, b, 1e-5)
    for xs, gs in ((np.asfortranarray(x), g), (x, np.broadcast_to(g[:1], g.shape))):
        o2, m2, r2 = layernorm.layer_norm_train(xs, w, b, 1e-5)
        np.testing.assert_allclose(o2, out, rtol=1e-5, atol=1e-5)
        dx, dw, db = layernorm.layer_norm_backward(xs, w, m2, r2, gs)
        want = _ln_reference(x, w, b, np.array(gs), 1e-5)
        np.testing.assert_allclose(dx, want[3], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(db, want[5], rtol=1e-4, atol=1e-4)
    x_nan = x.copy()
    x_nan[2, 5] = np.nan
    o3, m3, r3 = layernorm.layer_norm_train(x_nan, w, b, 1e-5)
    assert np.isnan(o3[2]).all() and np.isfinite(np.delete(o3, 2, axis=0)).all()
