"""Scaled dot-product attention on host arrays, blocked so that each block's scores stay
in cache: the softmax in place on them and its backward as one expression.

The scores are kept transposed, (S, L) per head: NumPy's batched matmul takes a
transposed view fast as its left operand but ran 3-5x slower with one as its right
operand, and a reduction over the key axis is then one across rows (vectorised) rather
than one along 64-element rows (a loop). A block of ``_BLOCK_BYTES`` of scores keeps
the max, exp, sum and scale passes in L2: over the whole (32, 4, 64, 64) batch of the
benchmark's Transformer each pass went to memory.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl

_MAX, _SUM = np.maximum.reduce, np.add.reduce
_BLOCK_BYTES = 1 << 18


def _flat(x, rows, cols):
    """x (..., rows, cols) as (batch, rows, cols), a copy only where it must be."""
    return x.reshape(-1, rows, cols)


def _block(length, source, itemsize):
    return max(1, _BLOCK_BYTES // (length * source * itemsize))


@hookimpl
def attention(q, k, v, mask, scale):
    lead, (length, width), source = q.shape[:-2], q.shape[-2:], k.shape[-2]
    q3, k3, v3 = _flat(q, length, width), _flat(k, source, width), _flat(v, source, v.shape[-1])
    batch, dtype = q3.shape[0], q.dtype
    out = np.empty((batch, length, v3.shape[-1]), dtype)
    scores = np.empty((batch, source, length), dtype)  # transposed: (S, L) per head
    masked = None
    if mask is not None:  # True where a score is dropped, transposed as the scores
        masked = np.logical_not(mask).swapaxes(-1, -2)
        if masked.ndim > 2:
            masked = np.broadcast_to(masked, lead + (source, length)).reshape(-1, source,
                                                                                length)
    step = _block(length, source, dtype.itemsize)
    q_t = np.empty((min(step, batch), width, length), dtype)
    factor = dtype.type(scale)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        block, qb = scores[i:j], q_t[:j - i]
        np.multiply(q3[i:j].swapaxes(-1, -2), factor, out=qb)
        np.matmul(k3[i:j], qb, out=block)
        if masked is not None:
            np.copyto(block, -np.inf, where=masked if masked.ndim == 2 else masked[i:j])
        block -= _MAX(block, axis=-2, keepdims=True)
        np.exp(block, out=block)
        total = _SUM(block, axis=-2, keepdims=True)
        block *= np.reciprocal(total, out=total)
        np.matmul(block.swapaxes(-1, -2), v3[i:j], out=out[i:j])
    weights = scores.reshape(lead + (source, length)).swapaxes(-1, -2)
    return out.reshape(lead + out.shape[1:]), weights


@hookimpl
def attention_backward(q, k, v, weights, grad, scale):
    (length, width), source = q.shape[-2:], k.shape[-2]
    q3, k3, v3 = _flat(q, length, width), _flat(k, source, width), _flat(v, source, v.shape[-1])
    depth = v3.shape[-1]
    probs = weights.swapaxes(-1, -2).reshape(-1, source, length)  # a view of the forward's
    grad3 = grad.reshape(-1, length, depth)
    batch, dtype = q3.shape[0], q.dtype
    grad_q, grad_k, grad_v = np.empty_like(q3), np.empty_like(k3), np.empty_like(v3)
    step = _block(length, source, dtype.itemsize)
    rows = min(step, batch)
    grad_t = np.empty((rows, depth, length), dtype)
    grad_s, work = np.empty((rows, source, length), dtype), np.empty((rows, source, length),
                                                                     dtype)
    factor = dtype.type(scale)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        n, p = j - i, probs[i:j]
        np.matmul(p, grad3[i:j], out=grad_v[i:j])
        g_t = grad_t[:n]
        np.copyto(g_t, grad3[i:j].swapaxes(-1, -2))
        ds = grad_s[:n]
        np.matmul(v3[i:j], g_t, out=ds)  # dL/dweights, transposed
        dot = _SUM(np.multiply(ds, p, out=work[:n]), axis=-2, keepdims=True)
        ds -= dot
        ds *= p
        ds *= factor
        np.matmul(ds.swapaxes(-1, -2), k3[i:j], out=grad_q[i:j])
        np.matmul(ds, q3[i:j], out=grad_k[i:j])
    return grad_q.reshape(q.shape), grad_k.reshape(k.shape), grad_v.reshape(v.shape)


