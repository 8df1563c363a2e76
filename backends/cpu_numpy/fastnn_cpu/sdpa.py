"""Scaled dot-product attention on host arrays, blocked so that each block's scores stay
in cache: the softmax in place on them and its backward as one expression.

The scores are kept transposed, (S, L) per head: NumPy's batched matmul takes a
transposed view fast as its left operand but ran 3-5x slower with one as its right
operand, and a reduction over the key axis is then one across rows (vectorised) rather
than one along 64-element rows (a loop). Blocks of about ``_BLOCK_BYTES`` of scores along
the first axis keep the max, exp, sum and scale passes in L2: over the whole (32, 4, 64,
64) batch of the benchmark's Transformer each pass went to memory. Strided head views
(rows of a wider projection) are used as they are: their matrices are row-major, which
BLAS takes, while copying them contiguous (16-float runs) cost about as much as the
attention's own matmuls. In float32, with no mask or one (L, S) mask for every head,
each block's softmax (and its backward) is one C call (native_act.c: three sweeps of
each matrix in L1 where NumPy made six to seven passes; nanoGPT's causal heads 0.91 ->
0.38 ms forward).
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import native

_MAX, _SUM = np.maximum.reduce, np.add.reduce
_BLOCK_BYTES = 1 << 18


def _batched(x):
    """x with at least one leading (batch) axis, and matrices BLAS can take: row-major
    (a unit last stride) or else copied."""
    if x.ndim == 2:
        x = x[None]
    if x.strides[-1] != x.itemsize:
        x = np.ascontiguousarray(x)
    return x


def _step(x, length, source):
    """How many entries of the first axis make a block of about _BLOCK_BYTES of scores."""
    per = x.size // max(x.shape[0], 1) // (length * x.shape[-1]) * length * source
    return max(1, _BLOCK_BYTES // max(per * x.itemsize, 1))


def _columns(scores, masked):
    """The C softmax down the columns (native_act.c) when it takes these: float32 scores
    (or probabilities) C-contiguous, no mask or one (S, L) mask for every matrix, and
    enough of them to pay for the call; else None (NumPy's passes)."""
    if (scores.dtype != np.float32 or not scores.flags.c_contiguous or scores.size < 4096
            or (masked is not None and masked.ndim != 2)):
        return None
    return native.act_library()


def _words(masked, source: int, length: int):
    """A boolean mask broadcast to (S, L), as C-contiguous int32 0 and 1."""
    return np.broadcast_to(masked, (source, length)).astype(np.int32, order="C")


@hookimpl
def attention(q, k, v, mask, scale):
    lead, (length, width), source = q.shape[:-2], q.shape[-2:], k.shape[-2]
    q3, k3, v3 = _batched(q), _batched(k), _batched(v)
    dtype, batch = q.dtype, q3.shape[0]
    inner = q3.shape[1:-2]
    out = np.empty(q3.shape[:-1] + (v.shape[-1],), dtype)
    scores = np.empty(q3.shape[:-2] + (source, length), dtype)  # transposed: (S, L)
    masked = None
    if mask is not None:  # True where a score is dropped, transposed as the scores
        if mask.ndim < 2:  # a (S,) mask (or a scalar) is one row for every query
            mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
        masked = np.logical_not(mask).swapaxes(-1, -2)
        if masked.ndim > 2:
            masked = np.broadcast_to(masked, scores.shape)
    step = _step(q3, length, source)
    q_t = np.empty((min(step, batch),) + inner + (width, length), dtype)
    factor = dtype.type(scale)
    lib = _columns(scores, masked)
    held = None if lib is None or masked is None else _words(masked, source, length)
    drop = None if held is None else native.address(held)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        block, qb = scores[i:j], q_t[:j - i]
        np.multiply(q3[i:j].swapaxes(-1, -2), factor, out=qb)
        np.matmul(k3[i:j], qb, out=block)
        if lib is not None:  # the passes below in one C call (native_act.c)
            lib.softmax_cols_f32(block.size // (source * length), source, length,
                                 native.address(block), drop)
        else:
            if masked is not None:
                np.copyto(block, -np.inf, where=masked if masked.ndim == 2 else masked[i:j])
            block -= _MAX(block, axis=-2, keepdims=True)
            np.exp(block, out=block)
            total = _SUM(block, axis=-2, keepdims=True)
            block *= np.reciprocal(total, out=total)
        np.matmul(block.swapaxes(-1, -2), v3[i:j], out=out[i:j])
    weights = scores.reshape(lead + (source, length)).swapaxes(-1, -2)
    return out.reshape(lead + out.shape[-2:]), weights


@hookimpl
def attention_backward(q, k, v, weights, grad, scale):
    length, source = q.shape[-2], k.shape[-2]
    q3, k3, v3, grad3 = _batched(q), _batched(k), _batched(v), _batched(grad)
    probs = _batched(weights.swapaxes(-1, -2))  # (S, L): the forward's own array
    dtype, batch, depth = q.dtype, q3.shape[0], v.shape[-1]
    inner = q3.shape[1:-2]
    # each gradient laid out in memory as its input is (a head view of (N, L, heads, E)
    # gives one that the layer's reshape back to (N, L, heads * E) takes without a copy)
    grad_q, grad_k, grad_v = (np.empty_like(x) for x in (q3, k3, v3))
    step = _step(q3, length, source)
    rows = (min(step, batch),) + inner
    grad_t = np.empty(rows + (depth, length), dtype)
    grad_s, work = np.empty(rows + (source, length), dtype), np.empty(rows + (source, length),
                                                                      dtype)
    factor = dtype.type(scale)
    lib = _columns(probs, None) if dtype == probs.dtype else None  # (ds is q's dtype)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        n, p = j - i, probs[i:j]
        np.matmul(p, grad3[i:j], out=grad_v[i:j])
        g_t = grad_t[:n]
        np.copyto(g_t, grad3[i:j].swapaxes(-1, -2))
        ds = grad_s[:n]
        np.matmul(v3[i:j], g_t, out=ds)  # dL/dweights, transposed
        if lib is not None:  # the passes below in one C call (native_act.c)
            lib.softmax_cols_backward_f32(ds.size // (source * length), source, length,
                                          native.address(ds), native.address(p),
                                          float(factor))
        else:
            dot = _SUM(np.multiply(ds, p, out=work[:n]), axis=-2, keepdims=True)
            ds -= dot
            ds *= p
            ds *= factor
        np.matmul(ds.swapaxes(-1, -2), k3[i:j], out=grad_q[i:j])
        np.matmul(ds, q3[i:j], out=grad_k[i:j])
    return grad_q.reshape(q.shape), grad_k.reshape(k.shape), grad_v.reshape(v.shape)
