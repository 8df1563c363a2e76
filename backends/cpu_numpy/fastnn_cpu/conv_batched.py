"""Stride-1 conv2d of one group, float32, in the flat layout of :mod:`fastnn_cpu.conv_2d`:
the im2col copied and multiplied a batch of equal chunks at a time (one MKL GEMM a batch
where MKL takes NumPy's products).

The flat output columns (every sample's Hp x Wp, padding rows included) are cut in
chunks of CHUNK_COLUMNS, and CHUNKS_PER_CALL consecutive chunks make one *batch*: one
np.copyto of their im2col columns from a strided view of the padded source, then one
batched np.matmul, each chunk's product (C_out, R) @ (R, 128) one BLAS call. OpenBLAS
(SkylakeX kernels) runs such small products through its small-matrix kernels, unpacked:
(16, 144) @ (144, 128) at 86 GFLOP/s, against 53-57 over the 284-1137 columns of
:mod:`fastnn_cpu.conv_plan`'s chunks, whose one GEMM a chunk each costs two Python-level
calls (an AMD EPYC core, one thread; see :mod:`fastnn_cpu.gemm_split`).

The input gradient is the same product over the gradient, padded in front, with the
flipped weight; the backward also multiplies each batch's columns by the padded input's
same flat columns for the weight gradient (as :func:`fastnn_cpu.conv_plan.backward`),
that input held channels last. Columns past the last sample read zeros (the source is
padded to whole batches). Against the plans, one process, cpu clock: (32, 16, 32, 32) ->
16, 3x3: forward 3.3 -> 2.6 ms, input gradient 3.2 -> 2.4, backward 5.9 -> 5.2;
(64, 16, 14, 14) -> 32: 2.6 -> 2.2, 3.0 -> 2.3, 5.0 -> 4.4.
"""

from __future__ import annotations

import numpy as np

from fastnn_cpu import conv_plan, mkl_gemm
from fastnn_cpu.views import reshaped_view

#: Output columns a chunk (one BLAS call) and chunks a batch (one copy, one matmul). Where
#: MKL takes the products (:func:`fastnn_cpu.mkl_gemm.into`), a batch is one GEMM over all
#: its columns, best over 1024 of them: (64, 16, 14, 14) -> 32 forward 2.07 -> 1.32-1.46
#: ms, (32, 16, 32, 32) -> 16 2.62 -> 2.19 (one Xeon thread).
CHUNK_COLUMNS = 128
CHUNKS_PER_CALL = 4 if mkl_gemm.VERSION is None else 8
#: Fewest multiply-adds of a batch's product for MKL (below, the batched small products).
MKL_MIN_MNK = 1 << 19
#: Fewest input and output channels for which this path runs.
MIN_CHANNELS = 8


def applies(x_dtype, weight_shape, groups):
    """Whether this path takes the call: float32, one group, MIN_CHANNELS or more on both
    sides (with 1-3 channels on either, each chunk's product is too thin: the input
    gradient and backward of (64, 1, 28, 28) -> 16 ran 1.1-1.3x slower than the plans)."""
    c_out, c_in = weight_shape[:2]
    return (groups == 1 and x_dtype == np.float32 and c_in >= MIN_CHANNELS
            and c_out >= MIN_CHANNELS)


class _Flat:
    """A flat source (channels, total + span) and an output (rows_out, total), ``total``
    whole batches covering ``m`` columns, with the per-batch views of both."""

    def __init__(self, lay, channels, rows_out, dtype, front=0):
        (kh, kw), (dh, dw) = lay.kernel, lay.dilation
        per_call = min(CHUNKS_PER_CALL, -(-lay.m // CHUNK_COLUMNS))
        self.per_call, c = per_call, CHUNK_COLUMNS
        width = per_call * c
        self.calls = -(-lay.m // width)
        total = self.calls * width
        span = (kh - 1) * dh * lay.wp + (kw - 1) * dw
        self.src = np.zeros((channels, front + total + span), dtype=dtype)
        self.out = np.empty((rows_out, total), dtype=dtype)
        # (R, per_call * c): one matrix for the weight product, its chunks (R, c) blocks
        # of it (row stride per_call * c) for the batched product
        rows = channels * kh * kw
        self.cols = np.empty((channels, kh, kw, per_call, c), dtype=dtype)
        self.whole = self.cols.reshape(rows, per_call * c)
        self.gemm = self.cols.reshape(rows, per_call, c).transpose(1, 0, 2)
        item = self.src.itemsize
        strides = (self.src.strides[0], dh * lay.wp * item, dw * item, c * item, item)
        self.steps = []
        for j in range(self.calls):
            start = j * width
            view = np.ndarray(self.cols.shape, dtype=dtype, buffer=self.src,
                              offset=start * item, strides=strides)
            target = self.out[:, start : start + width].reshape(rows_out, per_call, c)
            self.steps.append((view, target.transpose(1, 0, 2), start))
        self.lay, self.front = lay, front
        self.arrays = [self.src, self.out, self.cols]  # what the plan cache counts

    def grid(self, rows, offset=0):
        """Columns [offset, offset + m) of ``rows`` (r, ...) as (r, N, Hp, Wp), a view."""
        lay = self.lay
        return _view(rows[:, offset : offset + lay.m], (rows.shape[0], lay.n, lay.hp, lay.wp))


def _view(a, shape):
    """``a`` reshaped as a view (raises rather than copy: a plan's views must stay views)."""
    return reshaped_view(a, shape)


def _build_forward(x_shape, c_out, lay, dtype):
    n, c_in, h, w = x_shape
    flat = _Flat(lay, c_in, c_out, dtype)
    inner = flat.grid(flat.src)[:, :, lay.top : lay.top + h, lay.left : lay.left + w]
    kept = flat.grid(flat.out)[:, :, : lay.h_out, : lay.w_out]
    return flat, flat.arrays, inner.transpose(1, 0, 2, 3), kept.transpose(1, 0, 2, 3)


def forward(x, weight, lay):
    """conv2d forward (N, C_out, H_out, W_out) of the flat layout ``lay`` (stride 1)."""
    c_out = weight.shape[0]
    key = conv_plan._key("batched_forward", lay, x.shape[1], c_out, 1, x.dtype,
                         (CHUNK_COLUMNS, CHUNKS_PER_CALL))
    flat, _, inner, kept = conv_plan._plan(key, lambda: _build_forward(x.shape, c_out, lay,
                                                                       x.dtype))
    inner[...] = x
    _products(flat, weight.reshape(c_out, -1))
    return np.ascontiguousarray(kept)


def _products(flat, w):
    """Each batch's im2col columns copied, then multiplied by ``w`` into the output: one
    MKL GEMM into the batch's columns, else one batched product of its chunks."""
    width = flat.whole.shape[1]
    for view, target, start in flat.steps:
        np.copyto(flat.cols, view)
        if not mkl_gemm.into(w, flat.whole, flat.out[:, start : start + width],
                             min_mnk=MKL_MIN_MNK):
            np.matmul(w, flat.gemm, out=target)


def _flipped(weight):
    """w_flip (C_in, C_out * KH * KW): w_flip[ci, (co, a, b)] = w[co, ci, KH-1-a, KW-1-b]."""
    c_out, c_in, kh, kw = weight.shape
    w = weight[..., ::-1, ::-1].transpose(1, 0, 2, 3)
    return np.ascontiguousarray(w).reshape(c_in, c_out * kh * kw)


def _build_grad_input(grad_shape, c_in, lay, dtype, with_input):
    n, c_out = grad_shape[:2]
    (kh, kw), (dh, dw) = lay.kernel, lay.dilation
    front = (kh - 1) * dh * lay.wp + (kw - 1) * dw
    flat = _Flat(lay, c_out, c_in, dtype, front)
    inner = flat.grid(flat.src, front)[:, :, : lay.h_out, : lay.w_out].transpose(1, 0, 2, 3)
    h, w = lay.size
    kept = flat.grid(flat.out)[:, :, lay.top : lay.top + h, lay.left : lay.left + w]
    if not with_input:
        return flat, flat.arrays, inner, kept.transpose(1, 0, 2, 3)
    # the padded input in the same flat columns, channels last: (columns, C_in) rows that
    # the weight product reads contiguous (its transposed (C_in, columns) view ran 1.5x
    # slower); in halves of a batch's columns, as (R, 512) @ (512, C_in) with R = 144 and
    # 16 channels is past gemm_split.SMALL_MNK and each half is not
    xp = np.zeros((flat.out.shape[1], c_in), dtype=dtype)
    grid = _view(xp[: lay.m], (lay.n, lay.hp, lay.wp, c_in))
    inner_x = grid[:, lay.top : lay.top + h, lay.left : lay.left + w].transpose(0, 3, 1, 2)
    width = flat.per_call * CHUNK_COLUMNS
    halves = 2 if flat.per_call % 2 == 0 else 1
    rows = c_out * kh * kw
    whole = flat.whole.reshape(rows, halves, width // halves).transpose(1, 0, 2)
    x_t = [_view(xp[start : start + width], (halves, width // halves, c_in))
           for _, _, start in flat.steps]
    parts = np.empty((flat.calls, halves, rows, c_in), dtype=dtype)
    return (flat, flat.arrays + [xp, parts], inner, kept.transpose(1, 0, 2, 3),
            inner_x, whole, x_t, parts)


def grad_input(grad_out, weight, lay):
    """dx (N, C_in, H, W) as the convolution of the gradient, padded in front, with the
    flipped weight."""
    c_out, c_in = weight.shape[:2]
    key = conv_plan._key("batched_grad_input", lay, c_in, c_out, 1, grad_out.dtype,
                         (CHUNK_COLUMNS, CHUNKS_PER_CALL))
    flat, _, inner, kept, *_ = conv_plan._plan(key, lambda: _build_grad_input(
        grad_out.shape, c_in, lay, grad_out.dtype, False))
    inner[...] = grad_out
    _products(flat, _flipped(weight))
    return np.ascontiguousarray(kept)


def backward(x, grad_out, weight, lay):
    """(dx, dweight) from one im2col of the gradient: each batch's columns times the
    flipped weight into dx, and times the padded input's same flat columns into the
    weight gradient (the derivation in :func:`fastnn_cpu.conv_plan.backward`; its NOTE on
    NaN and Inf holds here too: the caller checks)."""
    c_out, c_in, kh, kw = weight.shape
    key = conv_plan._key("batched_backward", lay, c_in, c_out, 1, x.dtype,
                         (CHUNK_COLUMNS, CHUNKS_PER_CALL))
    plan = conv_plan._plan(key, lambda: _build_grad_input(grad_out.shape, c_in, lay, x.dtype,
                                                          True))
    flat, _, inner, kept, inner_x, whole, x_t, parts = plan
    inner[...] = grad_out
    inner_x[...] = x
    w = _flipped(weight)
    if mkl_gemm.VERSION is not None and x.dtype.char in "fd":
        grad_w = _mkl_backward(flat, w, x_t)
    else:
        for (view, target, _), x_cols, part in zip(flat.steps, x_t, parts):
            np.copyto(flat.cols, view)
            np.matmul(w, flat.gemm, out=target)
            np.matmul(whole, x_cols, out=part)
        grad_w = np.add.reduce(parts.reshape(-1, *parts.shape[2:]), axis=0)
    # rows (C_out, KH, KW) of the flipped taps -> (C_out, C_in, KH, KW)
    grad_w = grad_w.reshape(c_out, kh, kw, c_in)[:, ::-1, ::-1].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(kept), np.ascontiguousarray(grad_w)


def _mkl_backward(flat, w, x_t):
    """:func:`backward`'s loop with MKL's GEMMs: each batch's columns times the flipped
    weight into dx, and accumulated, times the input's same columns, straight into the
    weight gradient (rows (C_out, KH, KW) of the flipped taps, C_in)."""
    width = flat.whole.shape[1]
    c_in = x_t[0].shape[-1]
    grad_w = np.zeros((flat.whole.shape[0], c_in), dtype=w.dtype)
    for (view, target, start), x_cols in zip(flat.steps, x_t):
        np.copyto(flat.cols, view)
        if not mkl_gemm.into(w, flat.whole, flat.out[:, start : start + width], min_mnk=0):
            np.matmul(w, flat.gemm, out=target)
        x_rows = x_cols.reshape(width, c_in)  # (the halves are consecutive rows)
        if not mkl_gemm.into(flat.whole, x_rows, grad_w, accumulate=True, min_mnk=0):
            grad_w += flat.whole @ x_rows
    return grad_w
