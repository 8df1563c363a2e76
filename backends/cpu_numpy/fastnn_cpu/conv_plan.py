"""Stride-1 conv1d/conv2d in the flat layout of :mod:`fastnn_cpu.conv_2d`, as planned
chunks: forward, input gradient and weight gradient.

Each call of one layout (shapes, padding, dilation, groups, dtype) runs the same list of
column chunks over the same work arrays, so the chunks' views are made once and kept per
thread (a *plan*): a call is then two NumPy calls a chunk (copy the chunk's im2col
columns from a strided view of the padded input, one GEMM into the output rows), where
making the views, the slices and the reshapes cost as much as the copy (~8 us a chunk,
~130 chunks a call on a (32, 16, 32, 32) input; measured in benchmarks/bench_conv.py).

The chunks cover only the flat columns a result reads: per sample, the first H_out rows
of Wp columns (forward and weight gradient) or the H rows of the input inside the
padding (input gradient); the rows of bottom and top padding are not computed (the flat
layout still computes the Wp - W_out columns at the end of each row, which cost less than
a per-sample im2col's short rows). Consecutive samples share a chunk where the gap
between them is small against the chunk. The output of the GEMMs is a work array too:
its kept part is copied out once, into the NCHW result.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

#: im2col bytes a chunk: L2-sized for the products whose output is as wide as the chunk
#: (forward, input gradient: 128-256 KB measured best for 27-144 rows, 2x faster than
#: the whole matrix), larger for the weight gradient, whose output is one small matrix,
#: but at most WEIGHT_CHUNK_COLUMNS columns (its GEMM ran 1.5-2x slower over 4-7k
#: columns of 9-27 rows than over 1-2k; over 144 rows 2-3.6k columns ran best).
CHUNK_BYTES, WEIGHT_CHUNK_BYTES, WEIGHT_CHUNK_COLUMNS = 160 * 2**10, 2 * 2**20, 2048
#: Bytes of both operands of a chunk of the weight gradient by taps (grad_weight_taps).
TAP_CHUNK_BYTES = 192 * 2**10
#: Fewest input channels (one group) for which the weight gradient goes by taps: with 1-2
#: channels, each tap's product is a matrix-vector product, slower than the im2col GEMM.
TAP_MIN_CHANNELS = 3
#: Bytes of work arrays the plans of one thread keep (each plan holds its own: ~5 MB for
#: the ResNet's 16 x 32 x 32 convs at batch 32), least recently used dropped first; a plan
#: over a quarter of this is used once and not kept (it pays its allocation every call).
BUDGET_BYTES = 64 * 2**20

_local = threading.local()


def _nbytes(plan):
    """Bytes of the distinct arrays that own memory in ``plan`` (nested tuples and lists)."""
    seen, total, stack = set(), 0, [plan]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            base = item if item.base is None else item.base
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            if isinstance(base, np.ndarray) and id(base) not in seen:
                seen.add(id(base))
                total += base.nbytes
    return total


def _plan(key, build):
    plans = getattr(_local, "plans", None)
    if plans is None:
        plans = _local.plans = OrderedDict()
    kept = plans.get(key)
    if kept is not None:
        plans.move_to_end(key)
        return kept[0]
    plan = build()
    size = _nbytes(plan)
    if size <= BUDGET_BYTES // 4:
        plans[key] = (plan, size)
        total = sum(s for _, s in plans.values())
        while total > BUDGET_BYTES:
            total -= plans.popitem(last=False)[1][1]
    return plan


def _ranges(lay, first_row, rows, budget):
    """[(start, count)] chunks of flat columns covering rows [first_row, first_row + rows)
    of every sample (Wp columns a row), each at most ``budget`` columns (at least 64)."""
    seg, span = lay.hp * lay.wp, rows * lay.wp
    budget = max(64, budget)
    spans = []
    for s in range(lay.n):
        start = s * seg + first_row * lay.wp
        if spans and start + span - spans[-1][0] <= budget:
            spans[-1][1] = start + span - spans[-1][0]  # join: the gap is computed too
        else:
            spans.append([start, span])
    out = []
    for start, count in spans:
        pieces = -(-count // budget)
        size = -(-count // pieces)
        out += [(a, min(size, start + count - a)) for a in range(start, start + count, size)]
    return out


def _shifted(src, lay, start, count, flip=False):
    """(channels, KH, KW, count) view of ``src`` (channels, ...) contiguous: column q of tap
    (a, b) is flat position start + q + a*dh*Wp + b*dw of each channel's row."""
    (kh, kw), (dh, dw) = lay.kernel, lay.dilation
    item = src.itemsize
    return np.ndarray((src.shape[0], kh, kw, count), dtype=src.dtype, buffer=src,
                      offset=start * item, strides=(src.strides[0], dh * lay.wp * item,
                                                    dw * item, item))


def _key(kind, lay, c_in, c_out, groups, dtype, chunk_bytes=CHUNK_BYTES):
    return (kind, lay.n, lay.size, lay.kernel, lay.dilation, lay.top, lay.left, lay.hp,
            lay.wp, c_in, c_out, groups, np.dtype(dtype), chunk_bytes, WEIGHT_CHUNK_BYTES,
            WEIGHT_CHUNK_COLUMNS, TAP_CHUNK_BYTES)


class _Chunks:
    """Work arrays and per-chunk views: im2col of ``src`` (channels, ...) chunk by chunk."""

    def __init__(self, src, lay, ranges, groups, out=None):
        kh, kw = lay.kernel
        channels = src.shape[0]
        rows = channels * kh * kw
        work = np.empty(rows * max([c for _, c in ranges], default=0), dtype=src.dtype)
        self.steps = []
        for start, count in ranges:
            cols = work[: rows * count].reshape(channels, kh, kw, count)
            gemm = cols.reshape(groups, rows // groups, count)
            target = None if out is None else out[:, :, start : start + count]
            self.steps.append((cols, _shifted(src, lay, start, count), gemm, target, start,
                               count))


def _build_forward(x_shape, weight_shape, lay, groups, dtype, chunk_bytes):
    n, c_in, h, w = x_shape
    c_out = weight_shape[0]
    xp = np.zeros((c_in, lay.samples, lay.hp, lay.wp), dtype=dtype)
    inner = xp[:, :n, lay.top : lay.top + h, lay.left : lay.left + w].transpose(1, 0, 2, 3)
    out = np.empty((c_out, lay.m), dtype=dtype)
    ranges = _ranges(lay, 0, lay.h_out, chunk_bytes // (c_in * lay.kernel[0] * lay.kernel[1]
                                                        * xp.itemsize))
    chunks = _Chunks(xp, lay, ranges, groups, out.reshape(groups, c_out // groups, lay.m))
    kept = lay.keep(out).transpose(1, 0, 2, 3)
    return inner, chunks.steps, kept


def forward(x, weight, lay, groups, chunk_bytes=CHUNK_BYTES):
    """conv2d forward (N, C_out, H_out, W_out) in the flat layout (stride 1), over chunks
    of about ``chunk_bytes`` of im2col columns."""
    c_out = weight.shape[0]
    key = _key("forward", lay, x.shape[1], c_out, groups, x.dtype, chunk_bytes)
    inner, steps, kept = _plan(key, lambda: _build_forward(x.shape, weight.shape, lay,
                                                            groups, x.dtype, chunk_bytes))
    inner[...] = x
    w = weight.reshape(groups, c_out // groups, -1)
    for cols, src, gemm, target, _, _ in steps:
        np.copyto(cols, src)
        np.matmul(w, gemm, out=target)
    return np.ascontiguousarray(kept)


def _build_grad_input(grad_shape, weight_shape, lay, groups, dtype, chunk_bytes):
    n, c_out = grad_shape[:2]
    c_in = weight_shape[1] * groups
    kh, kw = lay.kernel
    dh, dw = lay.dilation
    front = (kh - 1) * dh * lay.wp + (kw - 1) * dw
    gp = np.zeros((c_out, front + lay.m), dtype=dtype)
    inner = lay.keep(gp[:, front:]).transpose(1, 0, 2, 3)
    dx = np.empty((c_in, lay.m), dtype=dtype)
    h, w = lay.size
    ranges = _ranges(lay, lay.top, h, chunk_bytes // (c_out * kh * kw * gp.itemsize))
    chunks = _Chunks(gp, lay, ranges, groups, dx.reshape(groups, c_in // groups, lay.m))
    full = dx.reshape(c_in, n, lay.hp, lay.wp)
    kept = full[:, :, lay.top : lay.top + h, lay.left : lay.left + w].transpose(1, 0, 2, 3)
    return inner, chunks.steps, kept


def grad_input(grad_out, weight, lay, groups, chunk_bytes=CHUNK_BYTES):
    """dx as the convolution of the gradient, padded in front, with the flipped weight
    (chunks as in :func:`forward`)."""
    c_out, c_in_g, kh, kw = weight.shape
    key = _key("grad_input", lay, c_in_g * groups, c_out, groups, grad_out.dtype, chunk_bytes)
    inner, steps, kept = _plan(key, lambda: _build_grad_input(
        grad_out.shape, weight.shape, lay, groups, grad_out.dtype, chunk_bytes))
    inner[...] = grad_out
    # w_flip[g, ci, (co, a, b)] = w[g*Co + co, ci, KH-1-a, KW-1-b]
    c_out_g = c_out // groups
    w = weight.reshape(groups, c_out_g, c_in_g, kh, kw)[..., ::-1, ::-1]
    w = np.ascontiguousarray(w.transpose(0, 2, 1, 3, 4)).reshape(groups, c_in_g,
                                                                  c_out_g * kh * kw)
    for cols, src, gemm, target, _, _ in steps:
        np.copyto(cols, src)
        np.matmul(w, gemm, out=target)
    return np.ascontiguousarray(kept)


def _build_grad_weight(x_shape, c_out, lay, groups, dtype):
    n, c_in, h, w = x_shape
    kh, kw = lay.kernel
    xp = np.zeros((c_in, lay.samples, lay.hp, lay.wp), dtype=dtype)
    inner = xp[:, :n, lay.top : lay.top + h, lay.left : lay.left + w].transpose(1, 0, 2, 3)
    # The gradient in its own (C_out, m) rows, read through a transposed view by the
    # GEMM: a column-major copy cost a transposing pass of 0.35-0.55 ms on (32, 16, 32, 32)
    # and its GEMM ran no faster on an EPYC Zen 5 (it was 15-20% faster on the Intel
    # machine the plans were first tuned on).
    g = np.zeros((c_out, lay.m), dtype=dtype)
    g_inner = lay.keep(g).transpose(1, 0, 2, 3)
    g_groups = g.reshape(groups, c_out // groups, lay.m)
    columns = WEIGHT_CHUNK_BYTES // (c_in * kh * kw * xp.itemsize)
    ranges = _ranges(lay, 0, lay.h_out, min(columns, WEIGHT_CHUNK_COLUMNS))
    chunks = _Chunks(xp, lay, ranges, groups)
    part = np.empty((groups, c_in // groups * kh * kw, c_out // groups), dtype=dtype)
    steps = [(cols, src, gemm, g_groups[:, :, start : start + count].transpose(0, 2, 1))
             for cols, src, gemm, _, start, count in chunks.steps]
    return inner, g_inner, steps, part


def grad_weight(x, grad_out, lay, groups, taps=True):
    """sum over the chunks of cols @ g^T: (C_out, C_in/groups, KH, KW); by taps
    (:func:`grad_weight_taps`) where ``taps`` and one group has TAP_MIN_CHANNELS or more.

    The thrown-away columns read real inputs; where one is NaN or Inf, the result is not
    finite and the caller redoes it with them cleared."""
    if taps and groups == 1 and x.shape[1] >= TAP_MIN_CHANNELS:
        return grad_weight_taps(x, grad_out, lay)
    c_out = grad_out.shape[1]
    key = _key("grad_weight", lay, x.shape[1], c_out, groups, x.dtype)
    inner, g_inner, steps, part = _plan(key, lambda: _build_grad_weight(
        x.shape, c_out, lay, groups, x.dtype))
    inner[...] = x
    g_inner[...] = grad_out
    grad_w = np.zeros(part.shape, dtype=x.dtype)
    for cols, src, gemm, g in steps:
        np.copyto(cols, src)
        np.matmul(gemm, g, out=part)
        grad_w += part
    kh, kw = lay.kernel
    # (groups, C_in/groups * KH * KW, C_out/groups) -> (C_out, C_in/groups, KH, KW)
    return np.ascontiguousarray(grad_w.transpose(0, 2, 1)).reshape(
        c_out, x.shape[1] // groups, kh, kw)


def _build_grad_weight_taps(x_shape, c_out, lay, dtype):
    n, c_in, h, w = x_shape
    (kh, kw), (dh, dw) = lay.kernel, lay.dilation
    xp = np.zeros((c_in, lay.samples, lay.hp, lay.wp), dtype=dtype)
    inner = xp[:, :n, lay.top : lay.top + h, lay.left : lay.left + w].transpose(1, 0, 2, 3)
    flat = xp.reshape(c_in, -1)
    g = np.zeros((c_out, lay.m), dtype=dtype)
    g_inner = lay.keep(g).transpose(1, 0, 2, 3)
    budget = min(4096, TAP_CHUNK_BYTES // ((c_in + c_out) * xp.itemsize))
    ranges = _ranges(lay, 0, lay.h_out, budget)
    # every chunk's product with every tap, summed over the chunks at the end
    parts = np.empty((len(ranges), kh, kw, c_out, c_in), dtype=dtype)
    calls = []
    for k, (start, count) in enumerate(ranges):
        g_chunk = g[:, start : start + count]
        calls += [(g_chunk, flat[:, start + a * dh * lay.wp + b * dw :][:, :count].T,
                   parts[k, a, b]) for a in range(kh) for b in range(kw)]
    return inner, g_inner, calls, parts


def grad_weight_taps(x, grad_out, lay):
    """The weight gradient of one group without im2col: per chunk of columns and per tap,
    g (C_out, chunk) @ (the input's chunk shifted by the tap)^T, a strided view that BLAS
    reads in place. Over chunks of 192-256 KB of both operands that product, with its long
    inner dimension, ran at 70-100 GFLOP/s (as fast as the im2col GEMM, without its copy:
    1.2-1.45x faster in all on the bench's convs of 16-32 channels; 2x slower over chunks
    of 384 KB and more)."""
    c_out = grad_out.shape[1]
    key = _key("grad_weight_taps", lay, x.shape[1], c_out, 1, x.dtype)
    inner, g_inner, calls, parts = _plan(key, lambda: _build_grad_weight_taps(
        x.shape, c_out, lay, x.dtype))
    inner[...] = x
    g_inner[...] = grad_out
    for g, shifted, into in calls:
        np.matmul(g, shifted, out=into)
    total = np.add.reduce(parts, axis=0)  # (KH, KW, C_out, C_in)
    return np.ascontiguousarray(total.transpose(2, 3, 0, 1))


def weight_product(cols, g):
    """g @ cols^T per group: (groups, C_out/groups, C_in/groups * K)."""
    # The wider of the two operands goes first: OpenBLAS runs (wide, m) @ (m, narrow)
    # fastest (measured in benchmarks/bench_core.py's conv case).
    if cols.shape[1] >= g.shape[1]:
        return np.matmul(cols, g.transpose(0, 2, 1)).transpose(0, 2, 1)
    return np.matmul(g, cols.transpose(0, 2, 1))


def _build_backward(x_shape, grad_shape, weight_shape, lay, groups, dtype, chunk_bytes):
    inner_g, steps, kept = _build_grad_input(grad_shape, weight_shape, lay, groups, dtype,
                                             chunk_bytes)
    n, c_in, h, w = x_shape
    xp = np.zeros((c_in, lay.samples, lay.hp, lay.wp), dtype=dtype)
    inner_x = xp[:, :n, lay.top : lay.top + h, lay.left : lay.left + w].transpose(1, 0, 2, 3)
    flat = xp.reshape(groups, c_in // groups, -1)
    c_out, _, kh, kw = weight_shape
    part = np.empty((groups, c_out // groups * kh * kw, c_in // groups), dtype=dtype)
    both = [(cols, src, gemm, target, flat[:, :, start : start + count].transpose(0, 2, 1))
            for cols, src, gemm, target, start, count in steps]
    return inner_g, inner_x, both, kept, part


def backward(x, grad_out, weight, lay, groups, chunk_bytes=CHUNK_BYTES):
    """(dx, dweight) from one im2col of the gradient: each chunk of the input gradient's
    columns (the gradient padded in front, shifted by the flipped taps) is multiplied by
    the flipped weight into dx, and by the padded input's same flat columns into the
    weight gradient: column p of flipped tap (KH-1-a, KW-1-b) holds the gradient of the
    output that reads input position p through tap (a, b). Input positions outside x are
    zero in the padded input, so the chunks over x's rows cover every term.

    NOTE: a thrown-away column's zero gradient times a NaN or Inf input is NaN, and the
    rows of the padding are not covered: where x or grad_out is not finite the weight
    gradient can differ from conv2d_grad_weight's; the caller checks and redoes it."""
    c_out, c_in_g, kh, kw = weight.shape
    key = _key("backward", lay, c_in_g * groups, c_out, groups, x.dtype, chunk_bytes)
    inner_g, inner_x, both, kept, part = _plan(key, lambda: _build_backward(
        x.shape, grad_out.shape, weight.shape, lay, groups, x.dtype, chunk_bytes))
    inner_g[...] = grad_out
    inner_x[...] = x
    c_out_g = c_out // groups
    w = weight.reshape(groups, c_out_g, c_in_g, kh, kw)[..., ::-1, ::-1]
    w = np.ascontiguousarray(w.transpose(0, 2, 1, 3, 4)).reshape(groups, c_in_g,
                                                                  c_out_g * kh * kw)
    grad_w = np.zeros(part.shape, dtype=x.dtype)
    for cols, src, gemm, target, x_t in both:
        np.copyto(cols, src)
        np.matmul(w, gemm, out=target)
        np.matmul(gemm, x_t, out=part)
        grad_w += part
    # (groups, C_out/groups * KH * KW (flipped taps), C_in/groups) -> (C_out, C_in/g, KH, KW)
    grad_w = grad_w.reshape(c_out, kh, kw, c_in_g)[:, ::-1, ::-1].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(kept), np.ascontiguousarray(grad_w)
