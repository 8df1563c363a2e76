"""``F.multi_head_attention_forward``: PyTorch's functional multi-head attention, the
computation under its ``nn.MultiheadAttention``, with its signature and every argument.

query (L, N, E) (or (L, E) unbatched), key and value (S, N, E_k), (S, N, E_v) are
projected by ``in_proj_weight`` (3E, E) (or, with ``use_separate_proj_weight``, the
``q/k/v_proj_weight`` (E, E), (E, E_k), (E, E_v)) and the chunks of ``in_proj_bias``;
``bias_k``/``bias_v`` (1, 1, E) append one key and value, ``static_k``/``static_v``
(N * heads, S, E / heads) replace the projected ones, ``add_zero_attn`` appends a key and
value of zeros. Masks as PyTorch's: a bool ``attn_mask`` ((L, S) or (N * heads, L, S)) or
``key_padding_mask`` ((N, S), or (S,) unbatched) is True where a key is masked out, a float
one is added to the scores; ``is_causal`` is a hint that needs ``attn_mask`` (the causal
mask), taken as is only when there is no key_padding_mask and no weights are asked for.

The heads are attended by :func:`fastnn.ops.attention.attention` (the fused hook where it
applies; with ``need_weights`` a row with every key masked out gives NaN, as PyTorch's
explicit softmax, else zeros, as its scaled_dot_product_attention). Returns (output,
weights averaged over heads (N, L, S) or per head (N, heads, L, S), or None).
"""

from __future__ import annotations

import math
import warnings

from fastnn.ops import attention as attn_ops
from fastnn.ops import elementwise as m
from fastnn.ops import joining, movement, nnops
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full

_OP = "multi_head_attention_forward"


def _batched(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's _mha_shape_check: whether the input is batched (3-D) or not (2-D)."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise ValueError(f"{_OP}: for batched (3-D) `query`, expected `key` and `value` to "
                             f"be 3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise ValueError(f"{_OP}: for batched (3-D) `query`, expected `key_padding_mask` "
                             f"to be `None` or 2-D but found {key_padding_mask.ndim}-D tensor")
    elif query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise ValueError(f"{_OP}: for unbatched (2-D) `query`, expected `key` and `value` "
                             f"to be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise ValueError(f"{_OP}: for unbatched (2-D) `query`, expected `key_padding_mask` "
                             f"to be `None` or 1-D but found {key_padding_mask.ndim}-D tensor")
        if attn_mask is not None and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.shape != expected:
                raise ValueError(f"{_OP}: expected `attn_mask` shape to be {expected} but got "
                                 f"{attn_mask.shape}")
    else:
        raise ValueError(f"{_OP}: query should be unbatched 2D or batched 3D tensor but "
                         f"received {query.ndim}-D query tensor")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise ValueError(f"{_OP}: expected `attn_mask` to be `None`, 2-D or 3-D but found "
                         f"{attn_mask.ndim}-D tensor")
    return query.ndim == 3


def _additive(mask, name, other, other_name, dtype):
    """PyTorch's _canonical_mask: a bool mask as -inf where True and 0 elsewhere (in the
    query's dtype), a float one as it is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{_OP}: {name} must be a Tensor or None, got {type(mask).__name__}")
    if mask.dtype.name != "bool" and not mask.dtype.is_floating:
        raise TypeError(f"{_OP}: only bool and floating types of {name} are supported, got "
                        f"{mask.dtype.name}")
    if other is not None and mask.dtype is not other.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      f"type for both instead.", stacklevel=3)
    if mask.dtype.name == "bool":
        return m.where(mask, -math.inf, full(mask.shape, 0.0, dtype, mask.device))
    return mask


def _append_column(mask):
    """``mask`` with one more key column of 0 (masks nothing); None stays None."""
    if mask is None:
        return None
    return joining.cat([mask, full(mask.shape[:-1] + (1,), 0.0, mask.dtype, mask.device)],
                       mask.ndim - 1)


def _projections(query, key, value, embed_dim, in_proj_weight, in_proj_bias, separate,
                 q_proj_weight, k_proj_weight, v_proj_weight):
    """The projected q, k, v, as PyTorch's _in_projection_packed / _in_projection."""
    if not separate:
        if in_proj_weight is None:
            raise ValueError(f"{_OP}: use_separate_proj_weight is False but in_proj_weight is "
                             f"None")
        packed = (3 * embed_dim, embed_dim)
        if in_proj_weight.shape != packed:
            raise ValueError(f"{_OP}: expecting in_proj_weight of shape {packed}, but got "
                             f"{in_proj_weight.shape}")
        if in_proj_bias is not None and in_proj_bias.shape != packed[:1]:
            raise ValueError(f"{_OP}: expecting in_proj_bias of shape {packed[:1]}, but got "
                             f"{in_proj_bias.shape}")
        if query is key and key is value:  # self-attention: one GEMM, then the three chunks
            return joining.chunk(nnops.linear(query, in_proj_weight, in_proj_bias), 3, -1)
        weights = joining.chunk(in_proj_weight, 3, 0)
    else:
        for name, given in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if given is None:
                raise ValueError(f"{_OP}: use_separate_proj_weight is True but {name}_proj_weight "
                                 f"is None")
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, w, t in zip(("query", "key", "value"), weights, (query, key, value)):
            if w.shape != (embed_dim, t.shape[-1]):
                raise ValueError(f"{_OP}: expecting {name} weights shape of "
                                 f"{(embed_dim, t.shape[-1])}, but got {w.shape}")
    biases = (None,) * 3 if in_proj_bias is None else joining.chunk(in_proj_bias, 3, 0)
    return tuple(nnops.linear(t, w, b) for t, w, b in zip((query, key, value), weights, biases))


def _static(given, projected, batch, heads, head_dim, name):
    """(N * heads, S, head_dim): ``given`` (checked) or the projected (S, N, E) by heads."""
    if given is None:
        source = projected.shape[0]
        return movement.transpose(movement.reshape(projected, (source, batch * heads, head_dim)),
                                  (1, 0, 2))
    if given.ndim != 3 or given.shape[0] != batch * heads or given.shape[2] != head_dim:
        raise ValueError(f"{_OP}: expecting {name} of shape ({batch * heads}, S, {head_dim}) "
                         f"(N * num_heads, S, E / num_heads), but got {given.shape}")
    return given


@public()
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """PyTorch's functional multi-head attention (see the module): (output, weights)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_OP}: {name} must be a Tensor, got {type(t).__name__}")
    batched = _batched(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = (movement.reshape(t, (t.shape[0], 1, t.shape[1]))
                             for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = movement.reshape(key_padding_mask, (1,) + key_padding_mask.shape)
    length, batch, embed_dim = query.shape
    padding = _additive(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask",
                        query.dtype)
    if is_causal and attn_mask is None:
        raise ValueError(f"{_OP}: Need attn_mask if specifying the is_causal hint. You may use "
                         f"the Transformer module method `generate_square_subsequent_mask` to "
                         f"create this mask.")
    if is_causal and padding is None and not need_weights:
        attn_mask = None  # the hint alone: the fused causal attention
    else:
        attn_mask = _additive(attn_mask, "attn_mask", None, "", query.dtype)
        if padding is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise ValueError(f"{_OP}: was expecting embedding dimension of {embed_dim_to_check}, "
                         f"but got {embed_dim}")
    heads = int(num_heads)
    head_dim = embed_dim // heads
    if head_dim * heads != embed_dim:
        raise ValueError(f"{_OP}: embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"{_OP}: key's sequence and batch dims {key.shape[:2]} do not "
                             f"match value's {value.shape[:2]}")
    elif key.shape != value.shape:
        raise ValueError(f"{_OP}: key shape {key.shape} does not match value shape "
                         f"{value.shape}")
    q, k, v = _projections(query, key, value, embed_dim, in_proj_weight, in_proj_bias,
                           use_separate_proj_weight, q_proj_weight, k_proj_weight,
                           v_proj_weight)
    source = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if attn_mask.shape != (length, source):
                raise ValueError(f"{_OP}: the shape of the 2D attn_mask is {attn_mask.shape}, "
                                 f"but should be {(length, source)}.")
            attn_mask = movement.reshape(attn_mask, (1,) + attn_mask.shape)
        elif attn_mask.shape != (batch * heads, length, source):
            raise ValueError(f"{_OP}: the shape of the 3D attn_mask is {attn_mask.shape}, but "
                             f"should be {(batch * heads, length, source)}.")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{_OP}: bias cannot be added to static key or value")
        k, v = (joining.cat([t, movement.broadcast_to(b, (1, batch, embed_dim))], 0)
                for t, b in ((k, bias_k), (v, bias_v)))
        attn_mask, padding = _append_column(attn_mask), _append_column(padding)
    elif bias_k is not None or bias_v is not None:
        raise ValueError(f"{_OP}: bias_k and bias_v must be given together (got only "
                         f"{'bias_k' if bias_v is None else 'bias_v'})")
    q = movement.transpose(movement.reshape(q, (length, batch * heads, head_dim)), (1, 0, 2))
    k = _static(static_k, k, batch, heads, head_dim, "static_k")
    v = _static(static_v, v, batch, heads, head_dim, "static_v")
    if add_zero_attn:
        zeros = full((batch * heads, 1, head_dim), 0.0, k.dtype, k.device)
        k, v = joining.cat([k, zeros], 1), joining.cat([v, zeros], 1)
        attn_mask, padding = _append_column(attn_mask), _append_column(padding)
    source = k.shape[1]
    if attn_mask is not None:  # (1 or N * heads, L, S) as (1, 1, L, S) or (N, heads, L, S)
        lead = (1, 1) if attn_mask.shape[0] == 1 else (batch, heads)
        attn_mask = movement.reshape(attn_mask, lead + attn_mask.shape[1:])
    if padding is not None:  # merged into the mask: (N, 1, 1, S), added
        if padding.shape != (batch, source):
            raise ValueError(f"{_OP}: expecting key_padding_mask shape of {(batch, source)}, "
                             f"but got {padding.shape}")
        padding = movement.reshape(padding, (batch, 1, 1, source))
        attn_mask = padding if attn_mask is None else m.add(attn_mask, padding)
    p = float(dropout_p) if training else 0.0
    q, k, v = (movement.reshape(t, (batch, heads) + t.shape[1:]) for t in (q, k, v))
    out, weights = attn_ops.attention(q, k, v, attn_mask, True, bool(is_causal) and
                                      not need_weights, p, safe=not need_weights,
                                      weights=bool(need_weights))
    out = movement.reshape(movement.transpose(out, (2, 0, 1, 3)), (length, batch, embed_dim))
    out = nnops.linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = movement.reshape(out, (length, out.shape[-1]))
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = movement.mean(weights, 1)
    if not batched:
        weights = movement.reshape(weights, weights.shape[1:])
    return out, weights
