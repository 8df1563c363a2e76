"""The conv2d weight gradient through the packed GEMM (B packed straight from x by
``k_pack_b_im2col2d``, A read from grad_out in place) against a NumPy float64 reference:
stride, asymmetric padding, dilation, groups, grad_out as a permuted view and as a view
whose positions are not one stride apart, float32 and float64."""

import numpy as np
import pytest


def _reference(x, g, kernel, stride, padding, dilation, groups):
    n, c_in = x.shape[:2]
    _, c_out, oh, ow = g.shape
    (kh, kw), (sh, sw), ((top, bottom), (left, right)), (dh, dw) = (
        kernel, stride, padding, dilation)
    cig, cog = c_in // groups, c_out // groups
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    dwt = np.zeros((c_out, cig, kh, kw))
    for gg in range(groups):
        for a in range(kh):
            for b in range(kw):
                xs = xp[:, gg * cig:(gg + 1) * cig, a * dh:a * dh + (oh - 1) * sh + 1:sh,
                        b * dw:b * dw + (ow - 1) * sw + 1:sw]
                dwt[gg * cog:(gg + 1) * cog, :, a, b] = np.einsum(
                    "nohw,nihw->oi", g[:, gg * cog:(gg + 1) * cog], xs)
    return dwt


# (x shape, C_out, kernel, stride, padding, dilation, groups, grad_out layout)
CASES = [((8, 16, 16, 16), 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, "dense"),
         ((3, 33, 13, 11), 9, (3, 2), (2, 1), ((1, 0), (2, 1)), (1, 2), 3, "permuted"),
         ((4, 5, 15, 17), 7, (2, 5), (1, 3), ((0, 2), (1, 1)), (2, 1), 1, "strided"),
         ((2, 7, 12, 9), 5, (3, 3), (2, 2), ((2, 2), (0, 3)), (2, 1), 1, "dense")]


def _grad_view(g, layout, dtype):
    from fastnn_opencl.misc import from_numpy

    n, c, oh, ow = g.shape
    if layout == "permuted":  # conv2d's GEMM result: (N, C, OH, OW) over (C, N, OH, OW)
        buf = from_numpy(np.ascontiguousarray(g.transpose(1, 0, 2, 3)).astype(dtype), 0)
        return buf.view(g.shape, (oh * ow, n * oh * ow, ow, 1))
    if layout == "strided":  # (N, C, OH, OW) over (N, C, OW, OH): positions not mergeable
        buf = from_numpy(np.ascontiguousarray(g.transpose(0, 1, 3, 2)).astype(dtype), 0)
        return buf.view(g.shape, (c * oh * ow, oh * ow, 1, oh))
    return from_numpy(g.astype(dtype), 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_conv2d_weight_gradient_matches_numpy(ocl, dtype, monkeypatch):
    from fastnn_opencl import conv_2d
    from fastnn_opencl.linalg import uses_cpu_kernels
    from fastnn_opencl.misc import from_numpy, to_numpy
    from fastnn_opencl.runtime import state

    dev = state(0)
    if dtype == "float64" and not dev.fp64:
        pytest.skip("no float64 on this device")
    if not uses_cpu_kernels(dev):
        pytest.skip("the packed GEMM runs on CPU devices only")
    rng = np.random.default_rng(2)
    for x_shape, c_out, kernel, stride, padding, dilation, groups, layout in CASES:
        oh, ow = conv_2d._sizes(x_shape[2:], kernel, stride, padding, dilation)
        n, c_in = x_shape[:2]
        ck = c_in // groups * kernel[0] * kernel[1]
        # small odd shapes take the packed path too (the real threshold is for speed)
        assert ck >= conv_2d.PACK_EDGE, x_shape
        monkeypatch.setattr(conv_2d, "PACK_CONV", min(conv_2d.PACK_CONV, c_out // groups * ck))
        calls = []
        monkeypatch.setattr(conv_2d, "_grad_weight_packed",
                            _counted(conv_2d._grad_weight_packed, calls))
        x = rng.standard_normal(x_shape)
        g = rng.standard_normal((n, c_out, oh, ow))
        got = to_numpy(conv_2d.conv2d_grad_weight(
            from_numpy(x.astype(dtype), 0), _grad_view(g, layout, dtype), kernel, stride,
            padding, dilation, groups))
        want = _reference(x, g, kernel, stride, padding, dilation, groups)
        tol = 2e-6 if dtype == "float32" else 1e-13
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), (x_shape, layout)
        assert calls, "the packed path did not run"


def _counted(fn, calls):
    def wrapped(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)
    return wrapped
