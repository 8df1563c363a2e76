"""The CUDA backend on a real GPU: kernels against the NumPy backend, and no host round trips.

Skips (with cupy's reason) where no usable CUDA device exists. The shared
conformance suite runs separately: ``pytest --pyargs fastnn.conformance
--backend cuda`` (benchmarks/gpu_check.sh runs both).
"""

from __future__ import annotations

import warnings

import fastnn_cpu
import numpy as np
import pytest
from fastnn_cpu import conv as cpu_conv
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import conv, fused, kernels

import fastnn as fnn
from fastnn import functional as F
from fastnn.api import registry
from tests.backends.cuda.conv_cases import CONV_CASES
from tests.backends.cuda.gpu_common import DTYPES, TOL, close, cupy_or_skip, rand

cp = cupy_or_skip()
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ops():
    return registry.get_backend("cuda").ops


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((4, 10), 1), ((3, 1), 1), ((2, 1000), 1),
                                        ((5, 3000), 1), ((2, 3, 4), 0), ((2, 3, 4), 1)])
def test_softmax_kernels(ops, dtype, shape, axis):
    x = rand(shape, dtype, scale=5)
    close(ops.softmax(cp.asarray(x), axis), cpu_fused.softmax(x, axis), dtype)
    close(ops.log_softmax(cp.asarray(x), axis), cpu_fused.log_softmax(x, axis), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,c", [(64, 10), (8, 3000), (1, 1)])
def test_cross_entropy_kernel(ops, dtype, n, c):
    logits = rand((n, c), dtype, scale=4)
    targets = np.random.default_rng(1).integers(0, c, n)
    loss, probs = ops.softmax_cross_entropy(cp.asarray(logits), cp.asarray(targets))
    ref_loss, ref_probs = cpu_fused.softmax_cross_entropy(logits, targets)
    close(loss, ref_loss, dtype)
    close(probs, ref_probs, dtype)


def test_cross_entropy_bad_targets_give_nan(ops):
    logits = rand((4, 5), "float32")
    targets = cp.asarray(np.array([0, 5, -1, 10**9], dtype=np.int32))
    loss, _ = ops.softmax_cross_entropy(cp.asarray(logits), targets)
    loss = cp.asnumpy(loss)
    assert np.isfinite(loss[0]) and np.isnan(loss[1:]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_loss_kernels_pass_the_conformance_check(dtype):
    """Both cross_entropy_loss hooks on the GPU's own kernels: ignored rows, a kept target
    outside [0, C), label smoothing, each reduction, rows of 700 (blocks of many warps)."""
    from fastnn.conformance.cases import CASES

    CASES["cross_entropy_loss_backward"].check(fnn.Device("cuda"), dtype,
                                               np.random.default_rng(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 7), (2, 3, 600), (3, 1)])
def test_rms_div_kernel(ops, dtype, shape):
    x = rand(shape, dtype)
    out, r = ops.rms_div(cp.asarray(x), 1e-6)
    ref_out, ref_r = cpu_fused.rms_div(x, 1e-6)
    close(out, ref_out, dtype)
    close(r, ref_r, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
def test_bias_act_and_activation_kernels(ops, dtype, kind):
    x, b = rand((33, 17), dtype, scale=3), rand((17,), dtype, seed=2)
    close(ops.bias_act(cp.asarray(x), cp.asarray(b), kind, 0.1),
          cpu_fused.bias_act(x, b, kind, 0.1), dtype)
    xt = cp.asarray(x).T  # a non-contiguous input takes the cupy path
    close(ops.bias_act(xt, cp.asarray(rand((33,), dtype)), kind, 0.1),
          cpu_fused.bias_act(x.T, rand((33,), dtype), kind, 0.1), dtype)
    if kind != "identity":
        hook = getattr(ops, kind)
        args = (0.1,) if kind == "leaky_relu" else ()
        ref = getattr(registry.hook_namespace(fastnn_cpu), kind)(x, *args)
        close(hook(cp.asarray(x), *args), ref, dtype)


def test_activations_propagate_nan(ops):
    x = cp.asarray(np.array([np.nan, -1.0, 2.0], dtype=np.float32))
    for kind in ("relu", "sigmoid", "gelu", "softplus", "silu"):
        assert np.isnan(cp.asnumpy(getattr(ops, kind)(x))[0]), kind


GPU_CONV_CASES = CONV_CASES + [(8, 16, 256, 32, 5, 1, 2, 1, 1)]


def close_sums(got, want, bound, dtype):
    """Check outputs that are sums of many products against a float64 reference.

    A float32 sum of n products is off by up to ~n * eps * sum|terms| (in practice
    a few eps * sum|terms|, measured <= 2.6 against NumPy's float32): a fixed
    rtol/atol fails on the outputs that cancel to near 0, while a wrong index
    is off by about |terms| itself, millions of times this bound.
    """
    err = np.abs(cp.asnumpy(got).astype(np.float64) - want)
    limit = 16 * np.finfo(dtype).eps * bound + np.finfo(dtype).tiny
    worst = np.unravel_index(np.argmax(err - limit), err.shape)
    assert (err <= limit).all(), (
        f"{int((err > limit).sum())} of {err.size} outside 16 eps * sum|terms|; worst at "
        f"{worst}: got {cp.asnumpy(got)[worst]}, want {want[worst]}, bound {bound[worst]}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", GPU_CONV_CASES)
def test_conv1d_kernels(ops, dtype, case):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = case
    x, w = rand((n, c_in, length), dtype, 1), rand((c_out, c_in // groups, k), dtype, 2)
    attrs = (stride, padding, dilation, groups)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)  # references: float64, same inputs
    out = ops.conv1d(cp.asarray(x), cp.asarray(w), *attrs)
    want, bound = (cpu_conv.conv1d(x64, w64, *attrs),
                   cpu_conv.conv1d(np.abs(x64), np.abs(w64), *attrs))
    close_sums(out, want, bound, dtype)
    g = rand(out.shape, dtype, 3)
    g64 = g.astype(np.float64)
    close_sums(ops.conv1d_grad_input(cp.asarray(g), cp.asarray(w), length, *attrs),
               cpu_conv.conv1d_grad_input(g64, w64, length, *attrs),
               cpu_conv.conv1d_grad_input(np.abs(g64), np.abs(w64), length, *attrs), dtype)
    close_sums(ops.conv1d_grad_weight(cp.asarray(x), cp.asarray(g), k, *attrs),
               cpu_conv.conv1d_grad_weight(x64, g64, k, *attrs),
               cpu_conv.conv1d_grad_weight(np.abs(x64), np.abs(g64), k, *attrs), dtype)
    # a transposed (non-contiguous) input goes through im2col's strides
    xt = cp.ascontiguousarray(cp.asarray(x).transpose(1, 0, 2)).transpose(1, 0, 2)
    close_sums(ops.conv1d(xt, cp.asarray(w), *attrs), want, bound, dtype)


def sum_tolerance(x, axis, dtype):
    """A sum's error bound: a few ulp per term (the kernels add in another order)."""
    eps = np.finfo(dtype).eps
    return dict(rtol=TOL[dtype]["rtol"], atol=16 * eps * np.abs(x).sum(axis=axis).max() + 1e-30)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,kernel", [
    ((1024, 2048), (0,), True),        # a bias gradient: the column kernel
    ((4, 5, 70), (0, 1), True),        # leading axes of a 3-D array
    ((20000, 3), (0,), False),         # beyond COLUMN_ROWS_MAX rows: cupy's reduction
    ((1024,), (0,), True),             # a loss: the one-block kernel
    ((300, 300), (0, 1), False),       # more than ONE_BLOCK_MAX elements: cupy
    ((6, 7), (1,), False),             # a trailing axis: cupy
    ((3, 1), None, True),
])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_kernels(ops, dtype, shape, axis, kernel, keepdims, monkeypatch):
    from fastnn_cuda import primitives

    taken = []
    original = primitives._sum_kernel

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(primitives, "_sum_kernel", spy)
    x = rand(shape, dtype, seed=7) + 0.5
    for name in ("sum", "mean"):
        got = getattr(ops, name)(cp.asarray(x), axis, keepdims)
        want = getattr(np, name)(x.astype(np.float64), axis=axis, keepdims=keepdims)
        assert got.dtype == x.dtype and got.shape == want.shape, (name, got.shape, want.shape)
        tol = sum_tolerance(x, axis, dtype)
        if name == "mean":
            tol["atol"] /= x.size / max(want.size, 1)
        np.testing.assert_allclose(cp.asnumpy(got), want, **tol, err_msg=name)
    assert taken == [kernel, kernel], "the raw kernel path was (not) taken where expected"


def test_sum_kernels_propagate_nan_and_inf(ops):
    x = np.ones((40, 33), np.float32)
    x[3, 2], x[5, 7] = np.nan, np.inf
    cols = cp.asnumpy(ops.sum(cp.asarray(x), (0,), False))
    assert np.isnan(cols[2]) and np.isinf(cols[7]) and cols[0] == 40
    assert np.isnan(cp.asnumpy(ops.mean(cp.asarray(x), (0, 1), False)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
@pytest.mark.parametrize("shape", [(1024, 2048), (7, 3), (4, 5, 40)])
def test_bias_act_backward_kernel(ops, dtype, kind, shape):
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    bias = rng.standard_normal(shape[-1]).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    out = cpu_fused.bias_act(x, bias, kind, 0.1)
    dz, db = ops.bias_act_backward(cp.asarray(x), cp.asarray(bias), cp.asarray(out),
                                   cp.asarray(grad), kind, 0.1)
    cpu = registry.get_backend("cpu").ops  # the core's composite on the NumPy backend
    want_dz, want_db = cpu.bias_act_backward(x, bias, out, grad, kind, 0.1)
    close(dz, want_dz, dtype)
    np.testing.assert_allclose(cp.asnumpy(db), want_db,
                               **sum_tolerance(want_dz.reshape(-1, shape[-1]), 0, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_backward_kernel_reads_a_broadcast_grad(ops, dtype):
    rng = np.random.default_rng(9)
    probs = rng.uniform(size=(64, 10)).astype(dtype)
    targets = rng.integers(0, 10, 64)
    scalar = cp.asarray(np.array(0.25, dtype))
    grad = cp.broadcast_to(scalar, (64,))  # stride 0, as the mean's backward makes it
    got = ops.softmax_cross_entropy_backward(cp.asarray(probs), cp.asarray(targets), grad)
    close(got, (probs - np.eye(10)[targets]) * 0.25, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_direct_cublas_matmul_matches_numpy(ops, dtype, monkeypatch):
    from fastnn_cuda import gemm

    monkeypatch.setenv("FASTNN_CUDA_GEMM", "cublas")
    direct = []
    original = gemm.matmul2d

    def spy(*args):
        out = original(*args)
        direct.append(out is not None)
        return out

    monkeypatch.setattr(gemm, "matmul2d", spy)
    rng = np.random.default_rng(10)
    for m, k, n in [(64, 48, 32), (1, 7, 5), (9, 1, 3), (5, 4, 1), (300, 257, 129)]:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        want = a.astype(np.float64) @ b.astype(np.float64)
        tol = dict(rtol=1e-4, atol=1e-4 * k) if dtype == "float32" else dict(rtol=1e-11,
                                                                             atol=1e-11 * k)
        views = {
            "C": lambda x: cp.asarray(x),
            "T": lambda x: cp.ascontiguousarray(cp.asarray(x).T).T,
            "rows of a wider array":
                lambda x: cp.pad(cp.asarray(x), ((0, 0), (0, 3)))[:, :x.shape[1]],
            "every other column": lambda x: cp.repeat(cp.asarray(x), 2, axis=1)[:, ::2],
        }
        for name_a, view_a in views.items():
            for name_b, view_b in views.items():
                got = ops.matmul(view_a(a), view_b(b))
                assert got.dtype == dtype and got.shape == (m, n)
                np.testing.assert_allclose(cp.asnumpy(got), want, **tol,
                                           err_msg=f"{name_a} @ {name_b}, ({m}, {k}, {n})")
    assert direct and all(direct), "every 2-D float product should take the cuBLAS path"
    # what the direct path does not take goes through cupy.matmul: batches, float16, empty
    x = cp.asarray(rng.standard_normal((2, 3, 4)))
    np.testing.assert_allclose(cp.asnumpy(ops.matmul(x, x.transpose(0, 2, 1))),
                               np.matmul(cp.asnumpy(x), cp.asnumpy(x).transpose(0, 2, 1)))
    h = cp.ones((3, 4), cp.float16)
    assert ops.matmul(h, h.T).dtype == cp.float16
    assert ops.matmul(cp.ones((0, 4), dtype), cp.ones((4, 2), dtype)).shape == (0, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swish_kernels(dtype):
    x, beta, g = rand((9, 5), dtype, 1), rand((5,), dtype, 2), rand((9, 5), dtype, 3)
    close(fused.swish(cp.asarray(x), cp.asarray(beta)), x / (1 + np.exp(-beta * x)), dtype)
    s = 1 / (1 + np.exp(-beta * x))
    grad_x, grad_beta = fused.swish_backward(cp.asarray(g), cp.asarray(x), cp.asarray(beta))
    close(grad_x, g * (s + beta * x * s * (1 - s)), dtype)
    close(grad_beta, (g * x * x * s * (1 - s)).sum(axis=0), dtype)


def test_float16_takes_the_cupy_paths(ops):
    x = rand((4, 6), "float16")
    np.testing.assert_allclose(cp.asnumpy(ops.softmax(cp.asarray(x), 1)),
                               cpu_fused.softmax(x.astype(np.float32), 1), rtol=5e-3, atol=1e-3)
    w = rand((3, 2, 3), "float16")
    got = conv.conv1d(cp.asarray(rand((2, 2, 8), "float16")), cp.asarray(w), 1, 1, 1, 1)
    assert got.dtype == np.float16 and got.shape == (2, 3, 8)


def test_tensors_move_and_mixing_devices_is_an_error():
    x = fnn.randn((3, 4), seed=0)
    y = x.to("cuda")
    assert y.device == "cuda" and np.array_equal(y.numpy(), x.numpy())
    with pytest.raises(fnn.DeviceMismatchError):
        x + y


def test_training_step_makes_no_host_transfers(monkeypatch):
    """One MLP step (forward, backward, fused SGD) never copies to or from the host."""
    rng = np.random.default_rng(0)
    with fnn.use("cuda"):
        w1 = fnn.tensor(rng.standard_normal((64, 32)) * 0.1, dtype="float32", requires_grad=True)
        b1 = fnn.zeros((32,), requires_grad=True)
        w2 = fnn.tensor(rng.standard_normal((32, 10)) * 0.1, dtype="float32", requires_grad=True)
        x = fnn.tensor(rng.standard_normal((128, 64)), dtype="float32")
        y = fnn.tensor(rng.integers(0, 10, 128), dtype="int64")
    ops = registry.get_backend("cuda").ops
    counts = {"to_numpy": 0, "from_numpy": 0}
    for name in counts:
        original = getattr(ops, name)

        def counted(*args, _name=name, _original=original):
            counts[_name] += 1
            return _original(*args)

        monkeypatch.setattr(ops, name, counted)
    params = [w1, b1, w2]

    def step():
        h = F.relu(F.matmul(x, w1) + b1)
        loss = F.cross_entropy(F.matmul(h, w2), y)
        loss.backward()
        new, _ = ops.sgd_step([p._data for p in params], [p.grad._data for p in params],
                              [None] * 3, [0.1] * 3, [0.0] * 3, 0.0, 0.0, False, True)
        for p in params:
            p.grad = None
        return loss, new

    step()  # compile the kernels first
    before = w1.numpy().copy()
    counts.update(to_numpy=0, from_numpy=0)
    allow = getattr(__import__("cupyx"), "allow_synchronize", None)  # deprecated in cupy
    if allow is None:
        loss, _ = step()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with allow(False):  # raises cupyx.DeviceSynchronized on a sync inside cupy
                loss, _ = step()
    assert counts == {"to_numpy": 0, "from_numpy": 0}
    assert np.isfinite(loss.item())
    assert not np.array_equal(w1.numpy(), before)  # the in-place update happened
