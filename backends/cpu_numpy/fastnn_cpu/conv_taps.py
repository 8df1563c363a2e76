"""Stride-1 conv1d of one group and its gradients tap by tap, sample by sample: no im2col.

With ``xp`` the input padded on both ends and ``W_k = weight[:, :, k]``::

    out[n]      = sum_k W_k   @ xp[n][:, k*d : k*d + L_out]
    dx[n]       = sum_k W_k^T @ gp[n][:, span - k*d : span - k*d + L]
    dW[:, :, k] = sum_n g[n]  @ xp[n][:, k*d : k*d + L_out]^T

where ``gp`` is the output gradient with ``span - padding`` zeros in front. Each term is
one batched GEMM over the samples that BLAS reads straight from a shifted view (unit
inner stride, row stride the padded length), and the forward and input gradient come
out in the (N, C, L) layout, with no column matrix, no thrown-away columns and no
transposed copy. On a Zen 5 core (OpenBLAS's Haswell kernels) this ran 1.15-1.3x faster
than the flat layout's planned im2col GEMMs on (32, 16-32, 256) -> 32 with kernel 5
(benchmarks/bench_models.py's Conv1d), forward and both gradients.

Short signals make the per-sample GEMMs too small: below MIN_LENGTH output positions the
flat layout of :mod:`fastnn_cpu.conv` stays.
"""

from __future__ import annotations

import numpy as np

from fastnn_cpu import scratch

#: Fewest output positions per sample for which the per-sample GEMMs run.
MIN_LENGTH = 64
#: Fewest input channels for which the forward goes by taps: with fewer, each tap's GEMM
#: is too thin (3-4 channels ran 1.3-2.1x slower than the flat layout), and a per-sample
#: im2col with one GEMM a sample runs instead.
FORWARD_TAP_MIN_CHANNELS = 16
#: Fewest rows (C_in * K) of the weight gradient's im2col for which it goes by taps: below
#: (16 channels, kernel 5) one GEMM over an im2col of the whole batch ran 1.2x faster.
WEIGHT_TAP_MIN_ROWS = 128


def applies(length_out, kernel_size, stride, padding, dilation, groups):
    """Whether this path takes the call: stride 1, one group, a long enough output, and
    padding no wider than the kernel's span (the input gradient's front padding)."""
    return (stride == 1 and groups == 1 and length_out >= MIN_LENGTH
            and padding <= dilation * (kernel_size - 1))


def _padded_input(x, padding):
    n, c, length = x.shape
    xp = scratch.zeros("conv1d_taps_input", (n, c, length + 2 * padding), x.dtype, padding)
    xp[:, :, padding : padding + length] = x
    return xp


def _sum_taps(taps, src, starts, length, out):
    """out = sum_k taps[k] @ src[:, :, starts[k] : starts[k] + length], batched over axis 0."""
    part = scratch.empty("conv1d_taps_part", out.shape, out.dtype)
    for k, start in enumerate(starts):
        np.matmul(taps[k], src[:, :, start : start + length], out=part if k else out)
        if k:
            np.add(out, part, out=out)
    return out


def forward(x, weight, padding, dilation):
    n, c_in, length = x.shape
    c_out, _, k = weight.shape
    length_out = length + 2 * padding - dilation * (k - 1)
    xp = _padded_input(x, padding)
    if c_in < FORWARD_TAP_MIN_CHANNELS:
        # per-sample im2col, (N, C_in * K, L_out), and one GEMM a sample
        s_n, s_c, s_l = xp.strides
        windows = np.ndarray((n, c_in, k, length_out), dtype=x.dtype, buffer=xp,
                             strides=(s_n, s_c, dilation * s_l, s_l))
        cols = scratch.empty("conv1d_taps_columns", windows.shape, x.dtype)
        np.copyto(cols, windows)
        return np.matmul(weight.reshape(c_out, c_in * k), cols.reshape(n, c_in * k, length_out))
    taps = np.ascontiguousarray(weight.transpose(2, 0, 1))  # (K, C_out, C_in)
    out = np.empty((n, c_out, length_out), dtype=x.dtype)
    starts = [tap * dilation for tap in range(k)]
    return _sum_taps(taps, xp, starts, length_out, out)


def grad_input(grad_out, weight, length, padding, dilation):
    n, c_out, length_out = grad_out.shape
    _, c_in, k = weight.shape
    span = dilation * (k - 1)
    front = span - padding
    gp = scratch.zeros("conv1d_taps_grad", (n, c_out, length + span), grad_out.dtype, front)
    gp[:, :, front : front + length_out] = grad_out
    taps = np.ascontiguousarray(weight.transpose(2, 1, 0))  # (K, C_in, C_out)
    dx = np.empty((n, c_in, length), dtype=grad_out.dtype)
    starts = [span - tap * dilation for tap in range(k)]
    return _sum_taps(taps, gp, starts, length, dx)


def grad_weight(x, grad_out, kernel_size, padding, dilation):
    n, c_in, _ = x.shape
    c_out, length_out = grad_out.shape[1:]
    xp = _padded_input(x, padding)
    if c_in * kernel_size < WEIGHT_TAP_MIN_ROWS:
        # one GEMM over the whole batch: im2col (C_in * K, N * L_out) times the gradient
        # as (N * L_out, C_out), the long dimension inside
        s_n, s_c, s_l = xp.strides
        windows = np.ndarray((c_in, kernel_size, n, length_out), dtype=x.dtype, buffer=xp,
                             strides=(s_c, dilation * s_l, s_n, s_l))
        cols = scratch.empty("conv1d_taps_columns_t", windows.shape, x.dtype)
        np.copyto(cols, windows)
        g = scratch.empty("conv1d_taps_grad_t", (c_out, n, length_out), x.dtype)
        np.copyto(g, grad_out.transpose(1, 0, 2))
        rows = c_in * kernel_size
        total = np.matmul(cols.reshape(rows, -1), g.reshape(c_out, -1).T)  # (C_in * K, C_out)
        return np.ascontiguousarray(total.T).reshape(c_out, c_in, kernel_size)
    # (N, L_out, C_out), which BLAS reads transposed; a view with other strides (a
    # broadcast gradient) would send np.matmul to its loop without BLAS
    g_t = np.ascontiguousarray(grad_out).transpose(0, 2, 1)
    parts = scratch.empty("conv1d_taps_weight", (kernel_size, n, c_in, c_out), x.dtype)
    for tap in range(kernel_size):
        start = tap * dilation
        np.matmul(xp[:, :, start : start + length_out], g_t, out=parts[tap])
    total = np.add.reduce(parts, axis=1)  # (K, C_in, C_out)
    return np.ascontiguousarray(total.transpose(2, 1, 0))
