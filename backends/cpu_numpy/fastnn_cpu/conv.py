"""conv1d and its two gradients on a flat layout, one BLAS GEMM per group.

The batch is laid out as one long row per channel, ``(C, N * Lp)``: each
sample's padded signal in a segment of ``Lp`` positions (``L + 2 * padding``
rounded up to a multiple of the stride), so output position ``q`` of the whole
row reads input ``stride * q + dilation * tap``. The im2col matrix is then
``K`` copies of long contiguous (or strided) rows, the GEMMs cover the whole
batch, and the gradient with respect to the input accumulates each tap's GEMM
output with one long 2-d add instead of a 3-d scatter. The output columns that
straddle two segments are computed and thrown away; a spare segment after the
last sample holds what the last ones read.

When those thrown-away columns would be more than a few (a kernel nearly as
long as the signal, or a stride past it), each sample is its own row of
exactly ``L_out`` columns instead, the layout of PyTorch's im2col.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import conv_2d, conv_plan, conv_taps, scratch
from fastnn_cpu.conv_plan import weight_product as _weight_product

#: Most thrown-away output columns per sample the flat layout may compute: a fraction
#: of the kept ones plus a few that its long rows pay for (measured over kernel sizes
#: 3-33 and signals of 12-256: past that the per-sample layout was faster). The input
#: positions past each padded sample are held to the same fraction.
FLAT_WASTE, FLAT_SLACK = 0.25, 8


class _Layout:
    """Sizes of the layout for one conv1d call.

    The input is ``(C, samples, seg)`` (samples padded in segments, a spare one
    last in the flat layout), read as ``blocks`` rows of ``block_len`` positions
    with ``per_block`` output columns each; output column ``q`` of a block
    reads ``stride * q + dilation * tap``. ``seg_out`` output columns per
    sample, of which the first ``length_out`` are kept: ``m = n * seg_out``.
    """

    def __init__(self, n, length, kernel_size, stride, padding, dilation):
        self.n, self.stride, self.dilation, self.padding = n, stride, dilation, padding
        span = dilation * (kernel_size - 1)
        padded = length + 2 * padding
        self.length_out = (padded - span - 1) // stride + 1
        seg_out = -(-padded // stride)
        self.flat = (seg_out - self.length_out <= FLAT_WASTE * self.length_out + FLAT_SLACK
                     and seg_out * stride - padded <= FLAT_WASTE * padded)
        if self.flat:
            # The last sample's thrown-away columns read up to span - stride positions
            # past its segment, less than one segment.
            self.seg_out, self.seg, self.samples = seg_out, seg_out * stride, n + 1
            self.blocks, self.block_len, self.per_block = 1, (n + 1) * self.seg, n * seg_out
        else:
            self.seg_out, self.seg, self.samples = self.length_out, padded, n
            self.blocks, self.block_len, self.per_block = n, padded, self.length_out
        self.m = n * self.seg_out

    def thrown_away(self, rows):
        """The columns of ``rows`` (..., m) that no kept output uses, as a view."""
        return rows.reshape(*rows.shape[:-1], self.n, self.seg_out)[..., self.length_out :]


def _flat_input(x, lay):
    """x (N, C, L) as (C, blocks, block_len): zero padding around each sample (scratch)."""
    n, c, length = x.shape
    # n in the key: the flat layout's spare segment, never written, has the same shape
    # as another batch's last sample in the per-sample layout.
    xp = scratch.zeros("conv_input", (c, lay.samples, lay.seg), x.dtype, (n, lay.padding, length))
    xp[:, :n, lay.padding : lay.padding + length] = x.transpose(1, 0, 2)
    return xp.reshape(c, lay.blocks, lay.block_len)


def _flat_grad_out(grad_out, lay):
    """grad_out (N, C_out, L_out) as (C_out, N * seg_out), zero past L_out in each segment
    (scratch)."""
    n, c, length_out = grad_out.shape
    g = scratch.zeros("conv_grad_out", (c, n, lay.seg_out), grad_out.dtype, length_out)
    g[:, :, :length_out] = grad_out.transpose(1, 0, 2)
    return g.reshape(c, n * lay.seg_out)


def _columns(xb, kernel_size, lay):
    """im2col of the laid-out input: (C_in, K, m), rows ordered (channel, tap) (scratch)."""
    c = xb.shape[0]
    s_c, s_b, s_l = xb.strides
    # A strided view straight onto xb's (contiguous) buffer: as_strided costs ~10 us a call.
    windows = np.ndarray((c, kernel_size, lay.blocks, lay.per_block), dtype=xb.dtype, buffer=xb,
                         strides=(s_c, lay.dilation * s_l, s_b, lay.stride * s_l))
    cols = scratch.empty("conv_columns", (c, kernel_size, lay.m), xb.dtype)
    np.copyto(cols.reshape(windows.shape), windows)
    return cols


def _flat_2d(n, length, kernel_size, stride, padding, dilation):
    """The conv2d flat layout of a stride-1 conv1d over (N, C, 1, L), or None."""
    if stride != 1:
        return None
    lay = conv_2d._Layout2d(n, (1, length), (1, kernel_size), (1, 1), ((0, 0), (padding,
                            padding)), (1, dilation))
    return lay if lay.flat and lay.m else None


def _length_out(length, kernel_size, padding, dilation):
    return length + 2 * padding - dilation * (kernel_size - 1)  # at stride 1


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    n, _, length = x.shape
    if conv_taps.applies(_length_out(length, weight.shape[2], padding, dilation),
                         weight.shape[2], stride, padding, dilation, groups):
        return conv_taps.forward(x, weight, padding, dilation)
    lay = _flat_2d(n, length, weight.shape[2], stride, padding, dilation)
    if lay is not None:
        out = conv_plan.forward(x[:, :, None], weight[:, :, None], lay, groups)
        return out.reshape(out.shape[0], out.shape[1], -1)
    c_out, c_in_g, k = weight.shape
    lay = _Layout(x.shape[0], x.shape[2], k, stride, padding, dilation)
    cols = _columns(_flat_input(x, lay), k, lay).reshape(groups, c_in_g * k, lay.m)
    out = np.empty((c_out, lay.m), dtype=x.dtype)
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    np.matmul(w, cols, out=out.reshape(groups, c_out // groups, lay.m))
    return out.reshape(c_out, lay.n, lay.seg_out)[:, :, : lay.length_out].transpose(1, 0, 2)


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out = grad_out.shape[1]
    if conv_taps.applies(grad_out.shape[2], kernel_size, stride, padding, dilation, groups):
        return conv_taps.grad_weight(x, grad_out, kernel_size, padding, dilation)
    lay2 = _flat_2d(x.shape[0], x.shape[2], kernel_size, stride, padding, dilation)
    if lay2 is not None:
        grad_w = conv_plan.grad_weight(x[:, :, None], grad_out[:, :, None], lay2, groups)
        if np.isfinite(grad_w).all():
            return grad_w.reshape(c_out, x.shape[1] // groups, kernel_size)
        # NOTE: a NaN or Inf input read by a thrown-away column: the path below clears them.
    lay = _Layout(x.shape[0], x.shape[2], kernel_size, stride, padding, dilation)
    cols = _columns(_flat_input(x, lay), kernel_size, lay)
    c_in_g = x.shape[1] // groups
    g = _flat_grad_out(grad_out, lay).reshape(groups, c_out // groups, lay.m)
    grad_w = _weight_product(cols.reshape(groups, c_in_g * kernel_size, lay.m), g)
    if lay.flat and not np.isfinite(grad_w).all():
        # NOTE: the thrown-away columns read real samples (and the spare segment), and a
        # NaN or Inf there times their zero gradient is NaN: clear them and redo (rare).
        lay.thrown_away(cols)[...] = 0
        grad_w = _weight_product(cols.reshape(groups, c_in_g * kernel_size, lay.m), g)
    return grad_w.reshape(c_out, c_in_g, kernel_size)


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    n, c_out, length_out = grad_out.shape
    if conv_taps.applies(length_out, weight.shape[2], stride, padding, dilation, groups):
        return conv_taps.grad_input(grad_out, weight, input_length, padding, dilation)
    lay2 = _flat_2d(n, input_length, weight.shape[2], stride, padding, dilation)
    if lay2 is not None:
        dx = conv_plan.grad_input(grad_out[:, :, None], weight[:, :, None], lay2, groups)
        return dx.reshape(dx.shape[0], dx.shape[1], -1)
    _, c_in_g, k = weight.shape
    lay = _Layout(n, input_length, k, stride, padding, dilation)
    g = _flat_grad_out(grad_out, lay).reshape(groups, c_out // groups, lay.m)
    # Tap-major weight rows, so each tap's part of the product is one contiguous block.
    w = weight.reshape(groups, c_out // groups, c_in_g, k).transpose(0, 3, 2, 1)
    taps = scratch.empty("conv_taps", (groups, k * c_in_g, lay.m), grad_out.dtype)
    np.matmul(w.reshape(groups, k * c_in_g, c_out // groups), g, out=taps)
    if lay.flat and not np.isfinite(weight).all():
        # NOTE: a NaN or Inf weight times the zero gradient of a thrown-away column is
        # NaN, which the adds below would carry onto input positions no output reads.
        lay.thrown_away(taps)[...] = 0
    taps = taps.reshape(groups, k, c_in_g, lay.blocks, lay.per_block)
    dx = np.zeros((groups, c_in_g, lay.blocks, lay.block_len), dtype=grad_out.dtype)
    # Past the last column, not at it: stride * (per_block - 1) + 1 is negative for an
    # empty batch, and a negative stop would count from the end.
    reach = lay.stride * lay.per_block
    for tap in range(k):
        start = tap * lay.dilation
        dx[..., start : start + reach : lay.stride] += taps[:, tap]
    dx = dx.reshape(groups * c_in_g, lay.samples, lay.seg)
    return dx[:, :n, padding : padding + input_length].transpose(1, 0, 2)
