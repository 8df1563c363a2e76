"""The conv1d weight gradient of CPU devices against a NumPy float64 reference: strided
cases through the packed GEMM (B packed straight from x, A read from grad_out in place),
stride-1 cases through the direct kernel; dilation, groups, padding past the taps,
grad_out as a permuted view, float32 and float64."""

import numpy as np
import pytest


def _reference(x, g, k, stride, pad, dil, groups):
    n, c_in, _ = x.shape
    _, c_out, l_out = g.shape
    cig, cog = c_in // groups, c_out // groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    dw = np.zeros((c_out, cig, k))
    for gg in range(groups):
        for t in range(k):
            xs = xp[:, gg * cig:(gg + 1) * cig, t * dil:t * dil + (l_out - 1) * stride + 1:stride]
            dw[gg * cog:(gg + 1) * cog, :, t] = np.einsum(
                "nol,nil->oi", g[:, gg * cog:(gg + 1) * cog], xs)
    return dw


# (N, C_in, L, C_out, K, stride, padding, dilation, groups, grad_out permuted)
CASES = [(32, 32, 256, 32, 5, 1, 2, 1, 1, False), (8, 8, 2000, 8, 3, 2, 1, 2, 2, True),
         (5, 16, 333, 24, 4, 1, 0, 1, 1, True), (2, 7, 3001, 9, 7, 3, 4, 2, 1, False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_conv1d_weight_gradient_matches_numpy(ocl, dtype):
    from fastnn_opencl import conv
    from fastnn_opencl.linalg import uses_cpu_kernels
    from fastnn_opencl.misc import from_numpy, to_numpy
    from fastnn_opencl.runtime import state

    dev = state(0)
    if dtype == "float64" and not dev.fp64:
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(1)
    for n, c_in, length, c_out, k, stride, pad, dil, groups, permuted in CASES:
        l_out = (length + 2 * pad - dil * (k - 1) - 1) // stride + 1
        if not uses_cpu_kernels(dev):
            pytest.skip("the packed GEMM runs on CPU devices only")
        assert c_out // groups * (c_in // groups * k) * n * l_out >= conv.PACK_CONV
        x = rng.standard_normal((n, c_in, length))
        g = rng.standard_normal((n, c_out, l_out))
        if permuted:  # as conv1d's GEMM path returns it: (N, C, L) over a (C, N, L) buffer
            buf = from_numpy(np.ascontiguousarray(g.transpose(1, 0, 2)).astype(dtype), 0)
            grad = buf.view((n, c_out, l_out), (l_out, n * l_out, 1))
        else:
            grad = from_numpy(g.astype(dtype), 0)
        got = to_numpy(conv.conv1d_grad_weight(from_numpy(x.astype(dtype), 0), grad, k,
                                               stride, pad, dil, groups))
        want = _reference(x, g, k, stride, pad, dil, groups)
        tol = 2e-6 if dtype == "float32" else 1e-13
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), (n, c_in, length)
