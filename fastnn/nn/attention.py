"""MultiheadAttention, as PyTorch's (parameter names, layout, init and masks).

q, k, v are projected by the three (E, E) blocks of ``in_proj_weight`` (3E, E) and
``in_proj_bias`` (3E,), split into ``num_heads`` heads of E / num_heads features, attended
(:func:`fastnn.ops.attention.attention`), joined and projected by ``out_proj``. In the
masks a bool True is masked OUT (PyTorch's MultiheadAttention convention, the opposite of
``scaled_dot_product_attention``); a float mask is added to the scores.

``reverse(x, grad_out)`` is self-attention's (q = k = v = x), from the tape.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.nn.linear import Linear
from fastnn.nn.module import Module, Parameter, check_tensor, const_init, tape_reverse
from fastnn.ops import attention as attn_ops
from fastnn.ops import elementwise as m
from fastnn.ops import joining, movement, nnops
from fastnn.ops.tensor import full, host_rng


def _additive(mask):
    """A float mask as it is; a bool one as -inf where True, 0 elsewhere."""
    if mask.dtype.name != "bool":
        return mask
    return m.where(mask, -math.inf, full(mask.shape, 0.0, device=mask.device))


class MultiheadAttention(Module):
    """Multi-head attention; inputs (L, N, E), or (N, L, E) with ``batch_first``, or (L, E)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, dtype=None, device=None):
        super().__init__()
        self.embed_dim = integer("MultiheadAttention", "embed_dim", embed_dim)
        self.num_heads = integer("MultiheadAttention", "num_heads", num_heads)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by "
                             f"num_heads {num_heads}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1), got {dropout}")
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        self.head_dim = self.embed_dim // self.num_heads
        e = self.embed_dim
        bound = math.sqrt(6.0 / (e + 3 * e))  # xavier_uniform_ on (3E, E), as PyTorch
        self.in_proj_weight = Parameter.from_numpy(
            host_rng().uniform(-bound, bound, (3 * e, e)), "connective", dtype, device)
        self.in_proj_bias = const_init((3 * e,), 0.0, "bias", dtype, device) if bias else None
        self.out_proj = Linear(e, e, bias, dtype=dtype, device=device)
        if bias:
            self.out_proj.bias = const_init((e,), 0.0, "bias", dtype, device)

    def _heads(self, x, batch, length):
        """(L, N, E) -> (N, heads, L, head_dim)."""
        x = movement.reshape(x, (length, batch, self.num_heads, self.head_dim))
        return movement.transpose(x, (1, 2, 0, 3))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_tensor("MultiheadAttention", t)
            if t.ndim not in (2, 3) or t.shape[-1] != self.embed_dim:
                raise ValueError(f"MultiheadAttention: {name} must be (L, N, {self.embed_dim})"
                                 f"{' batch-first' if self.batch_first else ''} or "
                                 f"(L, {self.embed_dim}), got {t.shape}")
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (movement.reshape(t, (t.shape[0], 1, t.shape[1]))
                                 for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = movement.reshape(key_padding_mask,
                                                    (1,) + key_padding_mask.shape)
        elif self.batch_first:
            query, key, value = (movement.transpose(t, (1, 0, 2)) for t in (query, key, value))
        length, batch, _ = query.shape
        source = key.shape[0]
        weights = joining.chunk(self.in_proj_weight, 3, 0)
        biases = ([None] * 3 if self.in_proj_bias is None
                  else joining.chunk(self.in_proj_bias, 3, 0))
        q, k, v = (nnops.linear(t, w, b) for t, w, b in zip((query, key, value), weights, biases))
        q, k, v = self._heads(q, batch, length), self._heads(k, batch, source), \
            self._heads(v, batch, source)
        mask = self._mask(attn_mask, key_padding_mask, batch, length, source)
        p = self.dropout if self.training else 0.0
        out, attn = attn_ops.attention(q, k, v, mask, False, is_causal, p)
        out = movement.reshape(movement.transpose(out, (2, 0, 1, 3)),
                               (length, batch, self.embed_dim))
        out = self.out_proj(out)
        if unbatched:
            out = movement.reshape(out, (length, self.embed_dim))
        elif self.batch_first:
            out = movement.transpose(out, (1, 0, 2))
        if not need_weights:
            return out, None
        if average_attn_weights:
            attn = movement.mean(attn, 1)
        if unbatched:
            attn = movement.reshape(attn, attn.shape[1:])
        return out, attn

    def _mask(self, attn_mask, key_padding_mask, batch, length, source):
        """One mask broadcastable to (N, heads, L, S), True/inf = masked out; None if none."""
        for name, given in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
            if given is not None and not (given.dtype.name == "bool" or
                                          given.dtype.is_floating):
                # as PyTorch: an integer mask is ambiguous (0/1 flags or additive scores?)
                raise TypeError(f"MultiheadAttention: {name} must be bool (True = masked out) "
                                f"or floating (added to the scores), got {given.dtype.name}; "
                                f"convert with {name}.bool() or {name}.float()")
        mask = attn_mask
        if mask is not None:
            if mask.ndim == 3:  # (N * heads, L, S), as PyTorch
                mask = movement.reshape(mask, (batch, self.num_heads, length, source))
            elif mask.shape != (length, source):
                raise ValueError(f"MultiheadAttention: attn_mask must be ({length}, {source}) "
                                 f"or ({batch * self.num_heads}, {length}, {source}), got "
                                 f"{mask.shape}")
        if key_padding_mask is None:
            return mask
        if key_padding_mask.shape != (batch, source):
            raise ValueError(f"MultiheadAttention: key_padding_mask must be ({batch}, {source}),"
                             f" got {key_padding_mask.shape}")
        pad = movement.reshape(key_padding_mask, (batch, 1, 1, source))
        if mask is None:
            return pad
        if mask.dtype.name == "bool" and pad.dtype.name == "bool":
            return m.where(pad, pad, mask)
        return m.add(_additive(mask), _additive(pad))

    def reverse(self, x, grad_out):
        """Self-attention's gradients (q = k = v = x), from the tape."""
        return tape_reverse(self, lambda t: self(t, t, t, need_weights=False)[0], x, grad_out)
