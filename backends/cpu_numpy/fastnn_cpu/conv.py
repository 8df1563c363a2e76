"""conv1d and its two gradients on a flat layout, one BLAS GEMM per group.

The batch is laid out as one long row per channel, ``(C, N * Lp)``: each
sample's padded signal in a segment of ``Lp`` positions (``L + 2 * padding``
rounded up to a multiple of the stride), so output position ``q`` of the whole
row reads input ``stride * q + dilation * tap``. The im2col matrix is then
``K`` copies of long contiguous (or strided) rows, the GEMMs cover the whole
batch, and the gradient with respect to the input accumulates each tap's GEMM
output with one long 2-d add instead of a 3-d scatter. The few output columns
that straddle two segments are computed and thrown away.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import scratch


class _Layout:
    """Sizes of the flat layout for one conv1d call."""

    def __init__(self, n, length, kernel_size, stride, padding, dilation):
        self.n, self.stride, self.dilation, self.padding = n, stride, dilation, padding
        self.span = dilation * (kernel_size - 1)
        padded = length + 2 * padding
        self.length_out = (padded - self.span - 1) // stride + 1
        self.seg_out = -(-padded // stride)  # output positions per sample segment
        self.seg = self.seg_out * stride  # input positions per sample segment
        # Output columns computed: every valid one, none reading past the row's end.
        self.m = (n * self.seg - 1 - self.span) // stride + 1 if n else 0


def _flat_input(x, lay):
    """x (N, C, L) as (C, N * seg): zero padding before, zeros after each sample (scratch)."""
    n, c, length = x.shape
    xp = scratch.zeros("conv_input", (c, n, lay.seg), x.dtype, (lay.padding, length))
    xp[:, :, lay.padding : lay.padding + length] = x.transpose(1, 0, 2)
    return xp.reshape(c, n * lay.seg)


def _flat_grad_out(grad_out, lay):
    """grad_out (N, C_out, L_out) as (C_out, N * seg_out), zero past L_out in each segment
    (scratch)."""
    n, c, length_out = grad_out.shape
    g = scratch.zeros("conv_grad_out", (c, n, lay.seg_out), grad_out.dtype, length_out)
    g[:, :, :length_out] = grad_out.transpose(1, 0, 2)
    return g.reshape(c, n * lay.seg_out)


def _columns(xf, kernel_size, lay, groups):
    """im2col of the flat input: (groups, C_in/groups * K, m), rows ordered (channel, tap)
    (scratch)."""
    c = xf.shape[0]
    s_c, s_l = xf.strides
    # A strided view straight onto xf's (contiguous) buffer: as_strided costs ~10 us a call.
    windows = np.ndarray((c, kernel_size, lay.m), dtype=xf.dtype, buffer=xf,
                         strides=(s_c, lay.dilation * s_l, lay.stride * s_l))
    cols = scratch.empty("conv_columns", (c, kernel_size, lay.m), xf.dtype)
    np.copyto(cols, windows)
    return cols.reshape(groups, (c // groups) * kernel_size, lay.m)


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    c_out, c_in_g, k = weight.shape
    lay = _Layout(x.shape[0], x.shape[2], k, stride, padding, dilation)
    cols = _columns(_flat_input(x, lay), k, lay, groups)
    out = np.empty((c_out, lay.n * lay.seg_out), dtype=x.dtype)
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    np.matmul(w, cols, out=out.reshape(groups, c_out // groups, -1)[:, :, : lay.m])
    return out.reshape(c_out, lay.n, lay.seg_out)[:, :, : lay.length_out].transpose(1, 0, 2)


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out = grad_out.shape[1]
    lay = _Layout(x.shape[0], x.shape[2], kernel_size, stride, padding, dilation)
    cols = _columns(_flat_input(x, lay), kernel_size, lay, groups)
    g = _flat_grad_out(grad_out, lay).reshape(groups, c_out // groups, -1)[:, :, : lay.m]
    c_in_g = x.shape[1] // groups
    # The wider of the two operands goes first: OpenBLAS runs (wide, m) @ (m, narrow)
    # fastest (measured in benchmarks/bench_core.py's conv case).
    if c_in_g * kernel_size >= c_out // groups:
        grad_w = np.matmul(cols, g.transpose(0, 2, 1)).transpose(0, 2, 1)
    else:
        grad_w = np.matmul(g, cols.transpose(0, 2, 1))
    return grad_w.reshape(c_out, c_in_g, kernel_size)


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    n, c_out, _ = grad_out.shape
    _, c_in_g, k = weight.shape
    lay = _Layout(n, input_length, k, stride, padding, dilation)
    g = _flat_grad_out(grad_out, lay).reshape(groups, c_out // groups, -1)[:, :, : lay.m]
    # Tap-major weight rows, so each tap's part of the product is one contiguous block.
    w = weight.reshape(groups, c_out // groups, c_in_g, k).transpose(0, 3, 2, 1)
    taps = scratch.empty("conv_taps", (groups, k * c_in_g, lay.m), grad_out.dtype)
    np.matmul(w.reshape(groups, k * c_in_g, c_out // groups), g, out=taps)
    taps = taps.reshape(groups, k, c_in_g, lay.m)
    dx = np.zeros((groups, c_in_g, lay.n * lay.seg), dtype=grad_out.dtype)
    reach = lay.stride * (lay.m - 1) + 1
    for tap in range(k):
        start = tap * lay.dilation
        dx[:, :, start : start + reach : lay.stride] += taps[:, tap]
    dx = dx.reshape(groups * c_in_g, n, lay.seg)
    return dx[:, :, padding : padding + input_length].transpose(1, 0, 2)
