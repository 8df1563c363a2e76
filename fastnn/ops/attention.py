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
from fastnn.autograd.engine import attach
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
        keep = mask if allow else m.not_mask(mask)
        return m.where(keep, scores, -math.inf)
    if not mask.dtype.is_floating:
        raise TypeError(f"attention: attn_mask must be bool or floating (added to the "
                        f"scores), got {mask.dtype.name}; convert with .bool() or .float()")
    return m.add(scores, mask.to(scores.dtype) if mask.dtype is not scores.dtype else mask)


def dropout_weights(weights: Tensor, p: float) -> Tensor:
    keep = rand(weights.shape, dtype=weights.dtype, device=weights.device) >= p
    return m.mul(weights, m.mul(keep.astype(weights.dtype), 1.0 / (1.0 - p)))


_CAUSAL: dict = {}  # (L, S, device) -> the causal mask as the backend's bool array


def causal_data(length: int, source: int, device):
    """The (L, S) causal mask as a raw array of ``device``, made once per shape."""
    key = (length, source, device)
    mask = _CAUSAL.get(key)
    if mask is None:
        if len(_CAUSAL) >= 32:
            _CAUSAL.clear()
        mask = _CAUSAL[key] = device.ops.from_numpy(
            np.tril(np.ones((length, source), dtype=bool)), device.index)
    return mask


def fusable(q, k, v, mask, dropout_p) -> bool:
    """Whether the attention hook computes this call: no mask but the causal one, no
    dropout, one floating dtype, device and leading shape, nothing empty."""
    dtype, device = q._dtype, q._device
    return (mask is None and dropout_p == 0.0 and dtype.is_floating and k._dtype is dtype
            and v._dtype is dtype and k._device == device and v._device == device
            and q.ndim >= 2 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and q.numel() > 0 and k.numel() > 0 and v.numel() > 0)


def fused_attention(q, k, v, is_causal, scale) -> Tensor:
    """softmax(q k^T scale [causal]) v through the attention hook, one tape node."""
    device = q._device
    mask = causal_data(q.shape[-2], k.shape[-2], device) if is_causal else None
    out, weights = device.ops.attention(q._data, k._data, v._data, mask, scale)
    return attach(Tensor._make(out, q._dtype, device), "attention", (q, k, v),
                  (q._data, k._data, v._data, weights), (mask, scale))


def packed_attention(qkv, is_causal, scale=None, order=None) -> Tensor:
    """:func:`fused_attention` of q, k, v = qkv[0], qkv[1], qkv[2] (qkv (3, ..., L, E)),
    recorded on qkv: self-attention's gradient comes back as one array, laid out as
    qkv's storage is where ``order`` says qkv is that storage transposed by it."""
    order = tuple(range(qkv.ndim)) if order is None else tuple(order)
    device, shape = qkv._device, qkv.shape
    scale = 1.0 / math.sqrt(shape[-1]) if scale is None else float(scale)
    mask = causal_data(shape[-2], shape[-2], device) if is_causal else None
    out, weights = device.ops.attention_packed(qkv._data, mask, scale)
    return attach(Tensor._make(out, qkv._dtype, device), "attention_packed", (qkv,),
                  (qkv._data, weights), (mask, scale, (qkv._dtype.name, device.index), order))


def attention(q, k, v, mask=None, allow=True, is_causal=False, dropout_p=0.0, scale=None,
              safe=True, weights=True):
    """(output, weights): softmax(q k^T scale, masked) v and the softmax weights; with
    ``weights=False`` (output, None), through the attention hook where :func:`fusable`."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if not weights and fusable(q, k, v, mask, dropout_p):
        return fused_attention(q, k, v, is_causal, scale), None
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
                                 dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False):
    """softmax(query key^T * scale + mask) value over the last two axes; see the module.
    ``enable_gqa``: grouped-query attention, as PyTorch's: key and value with fewer heads
    (dim -3) than query, each shared by query's heads in groups (repeated to match)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention: {name} must be a Tensor, got "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"scaled_dot_product_attention: {name} must be (..., seq, "
                             f"features), got shape {t.shape}")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        heads, groups = query.shape[-3], key.shape[-3]
        if heads % groups or value.ndim < 3 or value.shape[-3] != groups:
            raise ValueError(f"scaled_dot_product_attention: with enable_gqa, query's {heads} "
                             f"heads must be a multiple of key's and value's ({groups} and "
                             f"{value.shape[-3] if value.ndim >= 3 else None})")
        key = key.repeat_interleave(heads // groups, dim=-3)
        value = value.repeat_interleave(heads // groups, dim=-3)
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: query {query.shape}, key {key.shape} "
                         f"and value {value.shape} must be (..., L, E), (..., S, E), (..., S, Ev)")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal=True, not "
                         "both (as PyTorch)")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got "
                         f"{dropout_p}")
    out, _ = attention(query, key, value, attn_mask, True, is_causal, dropout_p, scale,
                       weights=False)
    return out
