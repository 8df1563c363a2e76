"""The CUDA backend's cupy fallback paths, run with NumPy standing in for cupy.

On a GPU these paths serve dtypes without a kernel (float16) and layouts the
kernels do not take. cupy mirrors NumPy, so running them on NumPy checks their
math here, against the NumPy backend (the reference) and finite differences.
The raw-kernel paths themselves need a GPU (test_cuda_gpu.py).
"""

from __future__ import annotations

import fastnn_cpu
import fastnn_cpu.optim
import numpy as np
import pytest
from fastnn_cpu import conv as cpu_conv
from fastnn_cpu import conv_2d as cpu_conv2d
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import conv, conv_2d, fused, kernels, optim, primitives
from scipy import special

import fastnn as fnn
from fastnn.api import composite
from tests.backends.cuda.conv_cases import CONV2D_CASES, CONV_CASES
from tests.backends.cuda.cupy_standin import CupyStandIn
from tests.backends.cuda.optim_cases import OPTIM_CASES, RPROP_ARGS, case_id, states


@pytest.fixture(autouse=True)
def numpy_as_cupy(monkeypatch):
    for module in (conv, conv_2d, fused, optim, primitives):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: False)
    monkeypatch.setattr(primitives, "_special_erf", lambda: special.erf)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)




@pytest.mark.parametrize("case", CONV_CASES)
def test_conv1d_and_grads_match_numpy_backend(case):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = case
    x, w = rand(n, c_in, length, seed=1), rand(c_out, c_in // groups, k, seed=2)
    attrs = (stride, padding, dilation, groups)
    out = conv.conv1d(x, w, *attrs)
    np.testing.assert_allclose(out, cpu_conv.conv1d(x, w, *attrs), rtol=1e-12, atol=1e-12)
    g = rand(*out.shape, seed=3)
    np.testing.assert_allclose(conv.conv1d_grad_input(g, w, length, *attrs),
                               cpu_conv.conv1d_grad_input(g, w, length, *attrs),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(conv.conv1d_grad_weight(x, g, k, *attrs),
                               cpu_conv.conv1d_grad_weight(x, g, k, *attrs),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_and_grads_match_numpy_backend(case):
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w = rand(*x_shape, seed=1), rand(*w_shape, seed=2)
    attrs = (stride, padding, dilation, groups)
    out = conv_2d.conv2d(x, w, *attrs)
    np.testing.assert_allclose(out, cpu_conv2d.conv2d(x, w, *attrs), rtol=1e-12, atol=1e-12)
    g = rand(*out.shape, seed=3)
    np.testing.assert_allclose(conv_2d.conv2d_grad_input(g, w, x_shape[2:], *attrs),
                               cpu_conv2d.conv2d_grad_input(g, w, x_shape[2:], *attrs),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(conv_2d.conv2d_grad_weight(x, g, w_shape[2:], *attrs),
                               cpu_conv2d.conv2d_grad_weight(x, g, w_shape[2:], *attrs),
                               rtol=1e-12, atol=1e-12)


def test_cross_entropy_fallback_gives_nan_for_bad_targets_without_reading_them():
    logits = rand(4, 5)
    targets = np.array([0, 4, 5, -1])
    loss, probs = fused.softmax_cross_entropy(logits, targets)
    ref_loss, ref_probs = cpu_fused.softmax_cross_entropy(logits[:2], targets[:2])
    np.testing.assert_allclose(loss[:2], ref_loss, rtol=1e-12)
    assert np.isnan(loss[2:]).all()
    np.testing.assert_allclose(probs[:2], ref_probs, rtol=1e-12)


def test_cross_entropy_backward_fallback_gives_nan_rows_for_bad_targets():
    """The composite backward (dtypes without a kernel) makes a bad target's row NaN."""
    probs = np.random.default_rng(3).dirichlet(np.ones(5), 4)
    targets = np.array([0, 5, 2, -1])
    out = fused.softmax_cross_entropy_backward(probs, targets, np.ones(4))
    want = cpu_fused.softmax_cross_entropy_backward(probs[[0, 2]], targets[[0, 2]], np.ones(2))
    assert np.isnan(out[[1, 3]]).all()
    np.testing.assert_allclose(out[[0, 2]], want, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_fallbacks(axis):
    x = rand(3, 4, 5)
    np.testing.assert_allclose(fused.softmax(x, axis), cpu_fused.softmax(x, axis), rtol=1e-12)
    np.testing.assert_allclose(fused.log_softmax(x, axis), cpu_fused.log_softmax(x, axis),
                               rtol=1e-12)


def test_rms_div_fallback():
    x = rand(3, 7)
    out, r = fused.rms_div(x, 1e-6)
    ref_out, ref_r = cpu_fused.rms_div(x, 1e-6)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    np.testing.assert_allclose(r, ref_r, rtol=1e-12)


@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
def test_bias_act_fallback(kind):
    x, b = rand(4, 6) * 3, rand(6, seed=5)
    np.testing.assert_allclose(fused.bias_act(x, b, kind, 0.1),
                               cpu_fused.bias_act(x, b, kind, 0.1), rtol=1e-12, atol=1e-15)


def test_swish_fallback_and_its_gradients_against_finite_differences():
    x, beta, g = rand(3, 4), rand(4, seed=7), rand(3, 4, seed=8)
    np.testing.assert_allclose(fused.swish(x, beta), x / (1 + np.exp(-beta * x)), rtol=1e-12)
    grad_x, grad_beta = fused.swish_backward(g, x, beta)
    eps = 1e-6
    for arr, grad in ((x, grad_x), (beta, grad_beta)):
        numeric = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + eps
            up = np.sum(fused.swish(x, beta) * g)
            arr[i] = old - eps
            down = np.sum(fused.swish(x, beta) * g)
            arr[i] = old
            numeric[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def _params(seed):
    return [rand(3, 4, seed=seed), rand(5, seed=seed + 1)]


@pytest.mark.parametrize("momentum,nesterov,first", [(0.0, False, True), (0.9, False, True),
                                                     (0.9, True, False)])
def test_sgd_fallback_matches_numpy_backend(momentum, nesterov, first):
    grads = _params(10)
    bufs = [None, None] if momentum == 0 else _params(20)
    args = ([0.1, 0.2], [0.01, 0.0], momentum, 0.1, nesterov, first)
    got_p, got_b = optim.sgd_step(_params(0), grads, [b if b is None else b.copy() for b in bufs],
                                  *args)
    ref_p, ref_b = cpu_fused.sgd_step(_params(0), grads,
                                       [b if b is None else b.copy() for b in bufs], *args)
    for a, b in zip(got_p + got_b, ref_p + ref_b):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_fallback_matches_numpy_backend(decoupled):
    grads = _params(10)
    state = lambda: ([np.abs(a) for a in _params(30)], [np.abs(a) for a in _params(40)])  # noqa: E731
    args = ([0.1, 0.2], [0.01, 0.0], 0.9, 0.999, 1e-8, 3, decoupled)
    got = optim.adam_step(_params(0), grads, *state(), *args)
    ref = cpu_fused.adam_step(_params(0), grads, *state(), *args)
    for a, b in zip(sum(got, []), sum(ref, [])):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_rmsprop_fallback_matches_numpy_backend():
    grads = _params(10)
    args = ([0.1, 0.2], [0.01, 0.0], 0.99, 1e-8)
    got = optim.rmsprop_step(_params(0), grads, [np.abs(a) for a in _params(30)], *args)
    ref = cpu_fused.rmsprop_step(_params(0), grads, [np.abs(a) for a in _params(30)], *args)
    for a, b in zip(sum(got, []), sum(ref, [])):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_primitive_edge_cases():
    x = rand(2, 3)
    np.testing.assert_array_equal(primitives.sum(x, (), False), x)
    out = primitives.where(x > 0, x.astype(np.float32), 0.0)
    assert out.dtype == np.float32
    hot = primitives.one_hot(np.array([[0, 2], [1, 1]]), 3, "float32")
    np.testing.assert_array_equal(hot, np.eye(3, dtype=np.float32)[[[0, 2], [1, 1]]])
    np.testing.assert_allclose(primitives.sigmoid(np.array([-800.0, 0.0, 800.0])), [0, 0.5, 1])


def test_contiguous_keeps_0d_arrays_0d():
    # cupy.ascontiguousarray, like NumPy's, turns a 0-d array into shape (1,)
    x = np.array(2.5)
    out = primitives.contiguous(x)
    assert out.shape == () and out == 2.5
    t = rand(2, 3).T
    out = primitives.contiguous(t)
    assert out.flags.c_contiguous and np.array_equal(out, t)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's mean of an empty axis
@pytest.mark.parametrize("kernel", [False, True])
def test_rms_div_of_empty_rows_gives_nan_r(monkeypatch, kernel):
    # the kernel path launches nothing for empty rows: r must still be NaN, as in NumPy
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: kernel)
    x = np.zeros((3, 0), dtype=np.float32)
    out, r = fused.rms_div(x, 1e-6)
    ref_out, ref_r = cpu_fused.rms_div(x, 1e-6)
    assert out.shape == ref_out.shape == (3, 0)
    assert r.shape == ref_r.shape == (3, 1) and r.dtype == np.float32
    assert np.isnan(r).all() and np.isnan(ref_r).all()


def test_optimizer_kernels_take_only_params_whose_state_matches(monkeypatch):
    # the kernels read every state through the parameter's dtype and flat index
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: str(dtype) in ("float32", "float64"))
    p = [np.zeros((2, 3), np.float32) for _ in range(5)] + [np.zeros(3, np.float16)]
    p[4] = np.zeros((3, 2), np.float32).T  # a non-contiguous parameter
    state = [np.zeros((2, 3), np.float32), None, np.zeros((2, 3), np.float64),
             np.zeros((3, 2), np.float32).T, np.zeros((2, 3), np.float32), None]
    assert optim._kernel_groups(p) == {np.dtype("float32"): [0, 1, 2, 3]}
    assert optim._kernel_groups(p, state) == {np.dtype("float32"): [0, 1]}
    assert optim._kernel_groups(p, state, [np.zeros(6, np.float32)] * 6) == {}


@pytest.mark.parametrize("kind", ["identity", "relu", "leaky_relu", "sigmoid", "tanh", "silu",
                                  "gelu", "softplus"])
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 5), (5,), (3, 0)])
def test_bias_act_backward_fallback_matches_the_composite(kind, shape):
    x, bias, grad = rand(*shape, seed=1), rand(shape[-1], seed=2), rand(*shape, seed=3)
    out = cpu_fused.bias_act(x, bias, kind, 0.1)
    dz, db = fused.bias_act_backward(x, bias, out, grad, kind, 0.1)
    want_dz, want_db = composite.bias_act_backward(fnn.Device("cpu").ops, x, bias, out, grad,
                                                   kind, 0.1)
    assert db.shape == bias.shape
    np.testing.assert_allclose(dz, want_dz, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(db, want_db, rtol=1e-12, atol=1e-14)


def test_cross_entropy_backward_fallback_matches_the_composite():
    probs = np.random.default_rng(4).uniform(size=(5, 4))
    targets = np.array([0, 3, 1, 1, 2])
    grad = np.broadcast_to(np.float64(0.2), (5,))
    got = fused.softmax_cross_entropy_backward(probs, targets, grad)
    want = composite.softmax_cross_entropy_backward(fnn.Device("cpu").ops, probs, targets, grad)
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("axis", [(0,), (0, 1), None, (1,)])
def test_sum_and_mean_without_kernels_use_cupy(axis):
    x = rand(3, 4, seed=5)
    np.testing.assert_allclose(primitives.sum(x, axis, False), x.sum(axis=axis), rtol=1e-14)
    np.testing.assert_allclose(primitives.mean(x, axis, True), x.mean(axis=axis, keepdims=True),
                               rtol=1e-14)


@pytest.mark.parametrize("case", OPTIM_CASES, ids=case_id)
def test_newer_optimizer_steps_fallback_match_numpy_backend(case):
    # no kernel for the dtype: the hook runs fastnn's composite on (here NumPy's) cupy
    hook, kinds, rest = case
    n = len(_params(0))

    def fresh():
        return [[None] * n if s is None else s for s in states(
            kinds, lambda j: _params(30 + 10 * j),
            lambda j: [np.abs(a) + 10 for a in _params(30 + 10 * j)])]  # no NaN roots

    args = ([0.1, 0.2], [0.01, 0.0], *rest)
    got = getattr(optim, hook)(_params(0), _params(10), *fresh(), *args)
    ref = getattr(fastnn_cpu.optim, hook)(_params(0), _params(10), *fresh(), *args)
    for got_list, want_list in zip(got, ref):
        for a, b in zip(got_list, want_list):
            if b is None:
                assert a is None
            else:
                np.testing.assert_allclose(a, b, rtol=1e-12)


def test_assign_writes_through_the_backends_own_views():
    # the promise behind the assign hook: slice, transpose and reshape return views, and a
    # write into one reaches the array it views (cupy's views behave as NumPy's)
    from fastnn_cuda import indexing

    base = rand(3, 4)
    expected = base.copy()
    view = primitives.transpose(indexing.slice(base, (0, 1), (3, 4), (1, 2)), (1, 0))
    indexing.assign(view, np.full(view.shape, 7.0))
    expected[:, 1::2] = 7.0
    np.testing.assert_array_equal(base, expected)
    flat = primitives.reshape(base, (12,))
    indexing.assign(indexing.slice(flat, (2,), (4,), (1,)), np.array([-1.0, -2.0]))
    expected.reshape(-1)[2:4] = [-1.0, -2.0]
    np.testing.assert_array_equal(base, expected)


def test_rprop_fallback_matches_numpy_backend():
    prevs = _params(40)
    prevs[0][0, 0] = 0.0

    def fresh():
        return [a.copy() for a in prevs], [np.abs(a) + 0.01 for a in _params(50)]

    got = optim.rprop_step(_params(0), _params(10), *fresh(), *RPROP_ARGS)
    ref = fastnn_cpu.optim.rprop_step(_params(0), _params(10), *fresh(), *RPROP_ARGS)
    for got_list, want_list in zip(got, ref):
        for a, b in zip(got_list, want_list):
            np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("value", [0, 0.0, False, -0.0, 1.5, float("nan"), np.float32(0.0)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_full_of_zero_is_a_memset_with_the_same_bits(value, dtype, monkeypatch):
    made = []
    zeros = primitives.cp.zeros
    monkeypatch.setattr(primitives.cp, "zeros", lambda *a, **k: made.append(a) or zeros(*a, **k),
                        raising=False)
    if dtype in ("int64", "bool") and value != value:
        return  # (NaN has no integer value)
    got = primitives.full((2, 3), value, dtype, 0)
    want = np.full((2, 3), value, dtype=dtype)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()  # -0.0's sign too
    assert bool(made) == (type(value) in (int, float, bool) and value == 0
                          and np.copysign(1, value) > 0)
