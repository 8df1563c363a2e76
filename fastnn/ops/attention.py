"""Scaled dot-product attention on tensors, as PyTorch's ``F.scaled_dot_product_attention``.

    attn(q, k, v) = softmax(q k^T * scale + mask) v,  scale = 1/sqrt(E) by default

with q (..., L, E), k (..., S, E), v (..., S, Ev). A bool ``attn_mask`` says where a
query MAY attend (True) and a float one is added to the scores; ``is_causal`` lets query
i see keys j <= i. A row with nothing to attend to (every score -inf) gives zeros and no
gradient, as PyTorch 2.13's (its safe softmax; ``safe=False``: NaN, as its MultiheadAttention
with ``need_weights=True``). A composition
of tensor ops (batched matmul, where, the softmax hook): gradients from the tape.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.ops import elementwise as m
from fastnn.ops import movement, nnops
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, rand, tensor


def causal_mask(length: int, source: int, device) -> Tensor:
    """(L, S) bool, True where key j <= query i (may attend), as PyTorch's tril."""
    return tensor(np.tril(np.ones((length, source), dtype=bool)), device=device)


def apply_mask(scores: Tensor, mask, allow: bool) -> Tensor:
    """scores with ``mask`` applied: a bool mask keeps the scores where it equals ``allow``
    and puts -inf elsewhere; a float mask is added."""
    if mask is None:
        return scores
    if not isinstance(mask, Tensor):
        raise TypeError(f"attention: attn_mask must be a Tensor or None, got "
                        f"{type(mask).__name__}")
    if mask.dtype is dtypes.bool_:
        keep = mask if allow else m.compare("equal", mask, 0)
        return m.where(keep, scores, -math.inf)
    if not mask.dtype.is_floating:
        raise TypeError(f"attention: attn_mask must be bool or floating (added to the "
                        f"scores), got {mask.dtype.name}; convert with .bool() or .float()")
    return m.add(scores, mask.to(scores.dtype) if mask.dtype is not scores.dtype else mask)


def dropout_weights(weights: Tensor, p: float) -> Tensor:
    keep = rand(weights.shape, dtype=weights.dtype, device=weights.device) >= p
    return m.mul(weights, m.mul(keep.astype(weights.dtype), 1.0 / (1.0 - p)))


def attention(q, k, v, mask=None, allow=True, is_causal=False, dropout_p=0.0, scale=None,
              safe=True):
    """(output, weights): softmax(q k^T scale, masked) v and the softmax weights."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    k_t = movement.transpose(k, tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2))
    scores = m.mul(nnops.matmul(q, k_t), scale)
    if is_causal:
        scores = m.where(causal_mask(q.shape[-2], k.shape[-2], q.device), scores, -math.inf)
    scores = apply_mask(scores, mask, allow)
    empty = None
    if safe and mask is not None and k.shape[-2]:  # only a mask can leave a row no key
        empty = m.compare("equal", movement.max(scores.detach(), -1, True), -math.inf)
        scores = m.where(empty, 0.0, scores)  # finite, so no NaN in the gradient either
    weights = nnops.softmax(scores, -1)
    if empty is not None:
        weights = m.where(empty, 0.0, weights)
    if dropout_p > 0.0:
        weights = dropout_weights(weights, dropout_p)
    return nnops.matmul(weights, v), weights


@public()
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale=None):
    """softmax(query key^T * scale + mask) value over the last two axes; see the module."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention: {name} must be a Tensor, got "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"scaled_dot_product_attention: {name} must be (..., seq, "
                             f"features), got shape {t.shape}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: query {query.shape}, key {key.shape} "
                         f"and value {value.shape} must be (..., L, E), (..., S, E), (..., S, Ev)")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal=True, not "
                         "both (as PyTorch)")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got "
                         f"{dropout_p}")
    out, _ = attention(query, key, value, attn_mask, True, is_causal, dropout_p, scale)
    return out
