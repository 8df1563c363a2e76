"""conv2d's forward and stride-1 input gradient through the packed GEMM (B each sample's
im2col, packed straight from the input by ``k_pack_b_im2col2d_fwd``; A the weight in place,
flipped and transposed for the gradient) against the conformance suite's NumPy float64
reference: odd shapes, stride, asymmetric padding, dilation, groups, inputs as permuted
(non-contiguous) views, float32 and float64. The speed thresholds are lowered so that small
shapes take the path."""

import numpy as np
import pytest

from fastnn.conformance.cases_conv2d import conv2d_grads, conv2d_ref

# (x shape, weight shape, stride, padding as ((top, bottom), (left, right)), dilation, groups)
CASES = [((2, 5, 7, 6), (6, 5, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
         ((3, 6, 11, 9), (4, 3, 3, 2), (2, 1), ((1, 0), (2, 1)), (1, 2), 2),
         ((1, 4, 9, 13), (3, 4, 2, 5), (1, 3), ((0, 2), (1, 1)), (2, 1), 1),
         ((2, 4, 5, 4), (6, 2, 2, 3), (1, 1), ((1, 2), (0, 1)), (2, 1), 2),
         ((1, 3, 17, 19), (5, 3, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)]


def _put(a, dtype, permuted):
    """a on the device, contiguous or as an (N, C, H, W) view of an (N, H, W, C) buffer."""
    from fastnn_opencl.misc import from_numpy

    if not permuted:
        return from_numpy(a.astype(dtype), 0)
    n, c, h, w = a.shape
    buf = from_numpy(np.ascontiguousarray(a.transpose(0, 2, 3, 1)).astype(dtype), 0)
    return buf.view(a.shape, (h * w * c, 1, w * c, c))


def _params(stride, padding, dilation, groups):
    return dict(stride=stride, padding=(padding[0][0], padding[1][0]), dilation=dilation,
                groups=groups)


@pytest.fixture
def packed(ocl, monkeypatch):
    from fastnn_opencl import conv_2d
    from fastnn_opencl.linalg import uses_cpu_kernels
    from fastnn_opencl.runtime import state

    if not uses_cpu_kernels(state(0)):
        pytest.skip("the packed GEMM runs on CPU devices only")
    monkeypatch.setattr(conv_2d, "_packs_forward", lambda *args: True)
    calls = []
    real = conv_2d._forward_packed
    monkeypatch.setattr(conv_2d, "_forward_packed",
                        lambda *args, **kw: calls.append(1) or real(*args, **kw))
    return conv_2d, calls


@pytest.mark.parametrize("permuted", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_forward_and_input_gradient_match_numpy(packed, dtype, permuted):
    from fastnn_opencl.misc import to_numpy
    from fastnn_opencl.runtime import state

    conv_2d, calls = packed
    if dtype == "float64" and not state(0).fp64:
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(3)
    tol = 2e-6 if dtype == "float32" else 1e-13
    for x_shape, w_shape, stride, padding, dilation, groups in CASES:
        if padding[0][0] != padding[0][1] or padding[1][0] != padding[1][1]:
            continue  # the reference takes symmetric padding; asymmetric below
        x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
        params = _params(stride, padding, dilation, groups)
        want = conv2d_ref(x, w, **params)
        got = to_numpy(conv_2d.conv2d(_put(x, dtype, permuted), _put(w, dtype, False),
                                      stride, padding, dilation, groups))
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), x_shape
        if stride != (1, 1):
            continue
        g = rng.standard_normal(want.shape)
        want_dx = conv2d_grads(x, w, g, **params)[0]
        got_dx = to_numpy(conv_2d.conv2d_grad_input(
            _put(g, dtype, permuted), _put(w, dtype, False), x_shape[2:], stride, padding,
            dilation, groups))
        assert np.abs(got_dx - want_dx).max() <= tol * np.abs(want_dx).max(), x_shape
    assert len(calls) >= 4


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_paths_match_the_direct_kernel_with_asymmetric_padding(packed, dtype):
    """Asymmetric padding (which the reference above does not take): the packed forward and
    input gradient against the direct and im2col paths they replace."""
    from fastnn_opencl.misc import to_numpy
    from fastnn_opencl.runtime import state

    conv_2d, calls = packed
    if dtype == "float64" and not state(0).fp64:
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(4)
    tol = 2e-6 if dtype == "float32" else 1e-13
    for x_shape, w_shape, stride, padding, dilation, groups in CASES:
        x, w = _put(rng.standard_normal(x_shape), dtype, True), _put(
            rng.standard_normal(w_shape), dtype, False)
        attrs = (stride, padding, dilation, groups)
        got = to_numpy(conv_2d.conv2d(x, w, *attrs))
        g = _put(rng.standard_normal(got.shape), dtype, False)
        got_dx = to_numpy(conv_2d.conv2d_grad_input(g, w, x_shape[2:], *attrs))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(conv_2d, "_packs_forward", lambda *args: False)
            want = to_numpy(conv_2d.conv2d(x, w, *attrs))
            want_dx = to_numpy(conv_2d.conv2d_grad_input(g, w, x_shape[2:], *attrs))
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), x_shape
        assert np.abs(got_dx - want_dx).max() <= tol * np.abs(want_dx).max(), x_shape
    stride_one = sum(case[2] == (1, 1) for case in CASES)
    assert len(calls) == len(CASES) + stride_one  # every forward, stride-1 input gradient


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_narrow_32_channel_conv_takes_the_packed_path_as_shipped(ocl, dtype, monkeypatch):
    """Unforced thresholds, through the tape: F.conv2d forward and backward on a shape the
    real gate sends to the packed GEMM (32 channels a group, an output narrower than 8)."""
    from fastnn_opencl import conv_2d
    from fastnn_opencl.linalg import uses_cpu_kernels
    from fastnn_opencl.runtime import state

    import fastnn as fnn
    import fastnn.functional as F

    if not uses_cpu_kernels(state(0)) or (dtype == "float64" and not state(0).fp64):
        pytest.skip("the packed GEMM runs on CPU devices only; float64 needs cl_khr_fp64")
    calls = []
    real = conv_2d._forward_packed
    monkeypatch.setattr(conv_2d, "_forward_packed",
                        lambda *args, **kw: calls.append(1) or real(*args, **kw))
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 32, 7, 6)), rng.standard_normal((32, 32, 3, 3))
    params = dict(padding=(1, 0))
    want = conv2d_ref(x, w, **params)
    g = rng.standard_normal(want.shape)
    xt, wt = (fnn.tensor(a.astype(dtype), device="opencl", requires_grad=True) for a in (x, w))
    out = F.conv2d(xt, wt, None, **params)
    out.backward(fnn.tensor(g.astype(dtype), device="opencl"))
    want_dx, want_dw = conv2d_grads(x, w, g, **params)
    tol = 2e-6 if dtype == "float32" else 1e-13
    for got, ref in ((out, want), (xt.grad, want_dx), (wt.grad, want_dw)):
        assert np.abs(got.numpy() - ref).max() <= tol * np.abs(ref).max()
    assert len(calls) == 2  # the forward and the input gradient
