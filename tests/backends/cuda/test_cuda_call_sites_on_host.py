"""The CUDA backend's hooks, from their Python call sites down to the kernels, without a GPU.

The other host tests call each kernel with arguments they build themselves, so a
hook that passes its arguments in another order than the kernel declares, or
plans a grid that misses elements, would pass them and fail only on a GPU. Here
the hooks run as they are: ``cp`` is NumPy (arrays answering ``.device.id`` and
``.data.ptr`` as cupy's do), and each kernel launch runs the kernel's own source,
compiled for the host, over every block and thread of the grid the hook planned.
Results are compared with the NumPy backend.

Kernels whose threads exchange values run here with one warp per block
(column-tiled) or not at all (row-wise and one-block reductions need real warps:
test_cuda_column_kernels_threaded.py and the GPU tests cover them).
"""

from __future__ import annotations

import fastnn_cpu
import fastnn_cpu.optim
import numpy as np
import pytest
from fastnn_cpu import conv as cpu_conv
from fastnn_cpu import conv_2d as cpu_conv2d
from fastnn_cpu import fused as cpu_fused
from fastnn_cuda import conv, conv_2d, fused, kernels, launch, optim, primitives

import fastnn as fnn
from fastnn.api import composite, registry
from tests.backends.cuda.conv_cases import CONV2D_CASES, CONV_CASES
from tests.backends.cuda.cupy_standin import CupyStandIn
from tests.backends.cuda.host_build import (
    DevArray,
    build_serial,
    c_arg,
    require_compiler,
    run_serial,
)
from tests.backends.cuda.optim_cases import OPTIM_CASES, RPROP_ARGS, case_id, states

require_compiler()

def _dev(value):
    if isinstance(value, np.ndarray) and not isinstance(value, DevArray):
        return value.view(DevArray)
    if isinstance(value, tuple):
        return tuple(_dev(v) for v in value)
    return value


class _NumpyAsCupy(CupyStandIn):
    """NumPy's functions, held to cupy's signatures, returning DevArrays."""

    ndarray = DevArray

    def __init__(self):
        super().__init__(wrap=_dev)


SERIAL_SAFE = {"bias_act", "softmax_xent_backward", "swish_forward", "swish_backward",
               "im2col", "col2im", "im2col2d", "col2im2d",
               "sgd_step", "adam_step", "rmsprop_step",
               "bias_act_backward", "sum_rows", "amsgrad_step", "rmsprop_momentum_step",
               "adagrad_step", "radam_step", "nadam_step",
               "adadelta_step", "adamax_step", "asgd_step", "rprop_step"}


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_serial(tmp_path_factory.mktemp("call_sites"))


@pytest.fixture(params=["cuda", "tiny"])
def on_host(request, libs, monkeypatch):
    """The hooks' ``cp`` is NumPy and their launches run the host-built kernels; "tiny"
    also caps the plane grids so that every grid-stride loop goes round (and rows of up to
    32 share a block of 64 threads, two rows a block)."""
    fake = _NumpyAsCupy()
    for module in (conv, conv_2d, fused, optim, primitives):
        monkeypatch.setattr(module, "cp", fake)
    launches = []

    def function(base, dtype, device_id):
        assert base in SERIAL_SAFE, f"{base} needs real warps: not run on the host"
        assert device_id == 0

        def run(grid, block, args):
            launches.append(base)
            run_serial(libs, base, str(dtype), grid, block, [c_arg(a) for a in args])

        return run

    monkeypatch.setattr(kernels, "function", function)
    monkeypatch.setattr(launch, "COLUMN_THREADS", launch.WARP)  # one warp per block
    if request.param == "tiny":
        monkeypatch.setattr(launch, "PLANE_THREADS_MAX", 64)
        monkeypatch.setattr(launch, "PLANE_MAX_X", 1)
        monkeypatch.setattr(launch, "PLANE_MAX_YZ", 2)
    return launches


def rand(shape, dtype="float64", seed=0, scale=1.0):
    data = np.random.default_rng(seed).standard_normal(shape) * scale
    return _dev(data.astype(dtype))


TOL = {"float32": dict(rtol=3e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", list(kernels.ACTIVATION_CODES))
@pytest.mark.parametrize("shape", [(5, 37), (2, 3, 4), (1, 1)])
def test_bias_act(on_host, dtype, kind, shape):
    x, bias = rand(shape, dtype, 1, 3.0), rand(shape[-1:], dtype, 2)
    out = fused.bias_act(x, bias, kind, 0.1)
    np.testing.assert_allclose(out, cpu_fused.bias_act(np.asarray(x), np.asarray(bias), kind,
                                                        0.1), **TOL[dtype])
    assert on_host == ["bias_act"]


@pytest.mark.parametrize("name", ["relu", "sigmoid", "gelu", "silu", "softplus", "leaky_relu"])
def test_activation_primitives(on_host, name):
    x = rand((4, 45), "float64", 3, 3.0)
    args = (0.2,) if name == "leaky_relu" else ()
    out = getattr(primitives, name)(x, *args)
    want = getattr(registry.hook_namespace(fastnn_cpu), name)(np.asarray(x), *args)
    np.testing.assert_allclose(out, want, **TOL["float64"])
    assert on_host == ["bias_act"]


@pytest.mark.parametrize("broadcast", [False, True])
def test_softmax_cross_entropy_backward(on_host, broadcast):
    n, c = 6, 35
    probs = _dev(np.random.default_rng(4).dirichlet(np.ones(c), n))
    targets = _dev(np.random.default_rng(5).integers(0, c, n))
    grad = _dev(np.broadcast_to(np.float64(0.25), (n,)) if broadcast else rand((n,), seed=6))
    out = fused.softmax_cross_entropy_backward(probs, targets, grad)
    want = cpu_fused.softmax_cross_entropy_backward(np.asarray(probs), np.asarray(targets),
                                                     np.asarray(grad))
    np.testing.assert_allclose(out, want, **TOL["float64"])
    assert on_host == ["softmax_xent_backward"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_backward_of_a_bad_target_is_a_nan_row(on_host, dtype):
    """A target outside [0, C) (unchecked on a device) gives a NaN row, like its loss:
    finite, plausible gradients would let the optimizer step go ahead."""
    n, c = 5, 35
    probs = _dev(np.random.default_rng(4).dirichlet(np.ones(c), n).astype(dtype))
    targets = _dev(np.array([0, c, 7, -1, c - 1]))
    grad = rand((n,), dtype, seed=6)
    out = np.asarray(fused.softmax_cross_entropy_backward(probs, targets, grad))
    good = [0, 2, 4]
    want = cpu_fused.softmax_cross_entropy_backward(np.asarray(probs)[good],
                                                     np.asarray(targets)[good],
                                                     np.asarray(grad)[good])
    assert np.isnan(out[[1, 3]]).all()
    np.testing.assert_allclose(out[good], want, **TOL[dtype])
    assert on_host == ["softmax_xent_backward"]


def test_swish(on_host):
    x, beta, g = rand((3, 33), seed=7), rand((33,), seed=8), rand((3, 33), seed=9)
    s = 1 / (1 + np.exp(-np.asarray(beta) * np.asarray(x)))
    np.testing.assert_allclose(fused.swish(x, beta), np.asarray(x) * s, **TOL["float64"])
    grad_x, grad_beta = fused.swish_backward(g, x, beta)
    ds = s * (1 - s)
    np.testing.assert_allclose(grad_x, g * (s + beta * x * ds), **TOL["float64"])
    np.testing.assert_allclose(grad_beta, (g * x * x * ds).sum(axis=0), **TOL["float64"])
    assert on_host == ["swish_forward", "swish_backward"]




@pytest.mark.parametrize("case", CONV_CASES)
def test_conv1d_hooks(on_host, case):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = case
    x = rand((c_in, n, length), seed=10).transpose(1, 0, 2)  # read through strides
    w = rand((c_out, c_in // groups, k), seed=11)
    attrs = (stride, padding, dilation, groups)
    host_x, host_w = np.ascontiguousarray(x), np.asarray(w)
    out = conv.conv1d(x, w, *attrs)
    np.testing.assert_allclose(out, cpu_conv.conv1d(host_x, host_w, *attrs), **TOL["float64"])
    g = rand(out.shape, seed=12)
    np.testing.assert_allclose(conv.conv1d_grad_input(g, w, length, *attrs),
                               cpu_conv.conv1d_grad_input(np.asarray(g), host_w, length,
                                                            *attrs), **TOL["float64"])
    np.testing.assert_allclose(conv.conv1d_grad_weight(x, g, k, *attrs),
                               cpu_conv.conv1d_grad_weight(host_x, np.asarray(g), k, *attrs),
                               **TOL["float64"])
    assert on_host == ["im2col", "col2im", "im2col"]


@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_hooks(on_host, case):
    x_shape, w_shape, stride, padding, dilation, groups = case
    n, c_in = x_shape[:2]
    x = rand((c_in, n) + x_shape[2:], seed=20).transpose(1, 0, 2, 3)  # read through strides
    w = rand(w_shape, seed=21)
    attrs = (stride, padding, dilation, groups)
    host_x, host_w = np.ascontiguousarray(x), np.asarray(w)
    out = conv_2d.conv2d(x, w, *attrs)
    np.testing.assert_allclose(out, cpu_conv2d.conv2d(host_x, host_w, *attrs), **TOL["float64"])
    g = rand(out.shape, seed=22)
    np.testing.assert_allclose(conv_2d.conv2d_grad_input(g, w, x_shape[2:], *attrs),
                               cpu_conv2d.conv2d_grad_input(np.asarray(g), host_w, x_shape[2:],
                                                            *attrs), **TOL["float64"])
    np.testing.assert_allclose(conv_2d.conv2d_grad_weight(x, g, w_shape[2:], *attrs),
                               cpu_conv2d.conv2d_grad_weight(host_x, np.asarray(g), w_shape[2:],
                                                             *attrs), **TOL["float64"])
    assert on_host == ["im2col2d", "col2im2d", "im2col2d"]


@pytest.mark.parametrize("kind", ["relu", "gelu", "identity"])
def test_bias_act_backward(on_host, kind):
    x, bias, grad = rand((7, 40), seed=13), rand((40,), seed=14), rand((7, 40), seed=15)
    out = _dev(cpu_fused.bias_act(np.asarray(x), np.asarray(bias), kind, 0.1))
    dz, dbias = fused.bias_act_backward(x, bias, out, grad, kind, 0.1)
    cpu = fnn.Device("cpu").ops
    want_dz, want_db = composite.bias_act_backward(cpu, *(np.asarray(a) for a in
                                                          (x, bias, out, grad)), kind, 0.1)
    np.testing.assert_allclose(dz, want_dz, **TOL["float64"])
    np.testing.assert_allclose(dbias, want_db, **TOL["float64"])
    assert on_host == ["bias_act_backward"]


@pytest.mark.parametrize("axis,keepdims", [((0,), False), ((0, 1), True)])
def test_sum_and_mean_over_leading_axes(on_host, axis, keepdims):
    x = rand((3, 5, 37), seed=16)
    for name in ("sum", "mean"):
        got = getattr(primitives, name)(x, axis, keepdims)
        want = getattr(np.asarray(x), name)(axis=axis, keepdims=keepdims)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL["float64"])
    assert on_host == ["sum_rows", "sum_rows"]


SIZES = [(7, 5), (33,), (2, 3, 4)]


def _params(seed, positive=False):
    out = [np.asarray(rand(s, seed=seed + i)) for i, s in enumerate(SIZES)]
    return [np.abs(a) for a in out] if positive else out


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_step(on_host, momentum, nesterov):
    params, grads = _params(20), _params(30)
    bufs = [None] * len(SIZES)
    lrs, wds = [0.1, 0.05, 0.2], [0.01, 0.0, 0.0]
    want_p, want_b = cpu_fused.sgd_step([p.copy() for p in params], grads, bufs, lrs, wds,
                                         momentum, 0.0, nesterov, True)
    got_p, got_b = optim.sgd_step([_dev(p.copy()) for p in params],
                                  [_dev(g) for g in grads], bufs, lrs, wds, momentum, 0.0,
                                  nesterov, True)
    for got, want in zip(got_p + (got_b if momentum else []),
                         want_p + (want_b if momentum else [])):
        np.testing.assert_allclose(got, want, **TOL["float64"])
    assert on_host == ["sgd_step"]


@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_step(on_host, decoupled):
    params, grads = _params(40), _params(50)
    m, v = _params(60), _params(70, positive=True)
    lrs, wds = [0.01, 0.02, 0.03], [0.1, 0.0, 0.1]
    want = cpu_fused.adam_step([p.copy() for p in params], grads, [a.copy() for a in m],
                                [a.copy() for a in v], lrs, wds, 0.9, 0.999, 1e-8, 3, decoupled)
    got = optim.adam_step([_dev(p.copy()) for p in params], [_dev(g) for g in grads],
                          [_dev(a.copy()) for a in m], [_dev(a.copy()) for a in v], lrs, wds,
                          0.9, 0.999, 1e-8, 3, decoupled)
    for got_list, want_list in zip(got, want):
        for a, b in zip(got_list, want_list):
            np.testing.assert_allclose(a, b, **TOL["float64"])
    assert on_host == ["adam_step"]


def test_rmsprop_step(on_host):
    params, grads, sq = _params(80), _params(90), _params(100, positive=True)
    lrs, wds = [0.01, 0.02, 0.03], [0.0, 0.1, 0.0]
    want = cpu_fused.rmsprop_step([p.copy() for p in params], grads, [a.copy() for a in sq],
                                   lrs, wds, 0.99, 1e-8)
    got = optim.rmsprop_step([_dev(p.copy()) for p in params], [_dev(g) for g in grads],
                             [_dev(a.copy()) for a in sq], lrs, wds, 0.99, 1e-8)
    for got_list, want_list in zip(got, want):
        for a, b in zip(got_list, want_list):
            np.testing.assert_allclose(a, b, **TOL["float64"])
    assert on_host == ["rmsprop_step"]


@pytest.mark.parametrize("case", OPTIM_CASES, ids=case_id)
def test_newer_optimizer_steps(on_host, case):
    hook, kinds, rest = case
    params, grads = _params(110), _params(120)

    def fresh():
        # second moments well above the centred term's square: a real root, no NaN
        return states(kinds, lambda j: _params(130 + 10 * j),
                      lambda j: [a + 10 for a in _params(130 + 10 * j, positive=True)])

    lrs, wds = [0.01, 0.02, 0.03], [0.1, 0.0, 0.05]
    want = getattr(fastnn_cpu.optim, hook)(
        [p.copy() for p in params], grads,
        *[[None] * len(SIZES) if s is None else [a.copy() for a in s] for s in fresh()],
        lrs, wds, *rest)
    got = getattr(optim, hook)(
        [_dev(p.copy()) for p in params], [_dev(g) for g in grads],
        *[[None] * len(SIZES) if s is None else [_dev(a.copy()) for a in s] for s in fresh()],
        lrs, wds, *rest)
    for got_list, want_list in zip(got, want):
        for a, b in zip(got_list, want_list):
            if b is None:
                assert a is None
            else:
                np.testing.assert_allclose(a, b, **TOL["float64"])
    assert on_host == [hook]


def test_rprop_step(on_host):
    params, grads, prevs = _params(150), _params(160), _params(170)
    prevs[0][0] = 0.0  # a zero product keeps its step size
    sizes = [a + 0.01 for a in _params(180, positive=True)]
    want = fastnn_cpu.optim.rprop_step([p.copy() for p in params], grads,
                                       [a.copy() for a in prevs], [a.copy() for a in sizes],
                                       *RPROP_ARGS)
    got = optim.rprop_step([_dev(p.copy()) for p in params], [_dev(g) for g in grads],
                           [_dev(a.copy()) for a in prevs], [_dev(a.copy()) for a in sizes],
                           *RPROP_ARGS)
    for got_list, want_list in zip(got, want):
        for a, b in zip(got_list, want_list):
            np.testing.assert_allclose(a, b, **TOL["float64"])
    assert on_host == ["rprop_step"]
