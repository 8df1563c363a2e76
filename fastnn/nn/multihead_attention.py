"""MultiheadAttention, as PyTorch's (parameter names, layout, init and masks).

q, k, v are projected by the three (E, E) blocks of ``in_proj_weight`` (3E, E) and
``in_proj_bias`` (3E,) (with ``kdim``/``vdim`` other than E: ``q_proj_weight`` (E, E),
``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim)), split into ``num_heads`` heads
of E / num_heads features, attended (:func:`fastnn.ops.attention.attention`), joined and
projected by ``out_proj``. In the masks a bool True is masked OUT (PyTorch's
MultiheadAttention convention, the opposite of ``scaled_dot_product_attention``); a float
mask is added to the scores. ``add_bias_kv`` appends the learnt key ``bias_k`` and value
``bias_v`` (1, 1, E) to the sequence, ``add_zero_attn`` a key and value of zeros; neither is
masked. Arguments in PyTorch's order. ``is_causal=True`` masks later keys (PyTorch asks for
the causal ``attn_mask`` too and takes the flag as a hint; given both, they agree).

``reverse(x, grad_out)`` is self-attention's (q = k = v = x), from the tape.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.nn import init
from fastnn.nn.linear import Linear
from fastnn.nn.module import Module, Parameter, check_tensor, const_init, tape_reverse
from fastnn.ops import attention as attn_ops
from fastnn.ops import elementwise as m
from fastnn.ops import joining, movement, nnops
from fastnn.ops.tensor import full, host_rng


def _xavier_uniform(shape, dtype, device):
    bound = math.sqrt(6.0 / (shape[0] + shape[1]))
    return Parameter.from_numpy(host_rng().uniform(-bound, bound, shape), "connective", dtype,
                                device)


def _pad_mask(mask):
    """``mask`` with one more key column that masks nothing (False, or 0.0)."""
    if mask is None:
        return None
    column = full(mask.shape[:-1] + (1,), 0, mask.dtype, mask.device)
    return joining.cat([mask, column], mask.ndim - 1)


def _additive(mask):
    """A float mask as it is; a bool one as -inf where True, 0 elsewhere."""
    if mask.dtype.name != "bool":
        return mask
    return m.where(mask, -math.inf, full(mask.shape, 0.0, device=mask.device))


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's ``out_proj`` (a marker
    of its quantization code), so that a printed model reads as PyTorch prints it."""


class MultiheadAttention(Module):
    """Multi-head attention; inputs (L, N, E), or (N, L, E) with ``batch_first``, or (L, E)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        self.embed_dim = integer("MultiheadAttention", "embed_dim", embed_dim)
        self.num_heads = integer("MultiheadAttention", "num_heads", num_heads)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by "
                             f"num_heads {num_heads}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1), got {dropout}")
        e = self.embed_dim
        self.kdim = e if kdim is None else integer("MultiheadAttention", "kdim", kdim)
        self.vdim = e if vdim is None else integer("MultiheadAttention", "vdim", vdim)
        self._qkv_same_embed_dim = self.kdim == e and self.vdim == e
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        self.add_zero_attn = bool(add_zero_attn)
        self.head_dim = e // self.num_heads
        if self._qkv_same_embed_dim:  # xavier_uniform_ of each, as PyTorch
            self.in_proj_weight = _xavier_uniform((3 * e, e), dtype, device)
        else:
            self.in_proj_weight = None
            self.q_proj_weight = _xavier_uniform((e, e), dtype, device)
            self.k_proj_weight = _xavier_uniform((e, self.kdim), dtype, device)
            self.v_proj_weight = _xavier_uniform((e, self.vdim), dtype, device)
        self.in_proj_bias = const_init((3 * e,), 0.0, "bias", dtype, device) if bias else None
        if add_bias_kv:  # xavier_normal_ of (1, 1, E): std sqrt(2 / (E + E))
            self.bias_k, self.bias_v = (Parameter.from_numpy(
                host_rng().normal(0.0, math.sqrt(1.0 / e), (1, 1, e)), "bias", dtype, device)
                for _ in range(2))
        else:
            self.bias_k = self.bias_v = None
        self.out_proj = NonDynamicallyQuantizableLinear(e, e, bias, dtype=dtype, device=device)
        if bias:
            self.out_proj.bias = const_init((e,), 0.0, "bias", dtype, device)

    def _reset_parameters(self) -> None:
        """PyTorch's reset: the input projections xavier-uniform, their bias and
        out_proj's 0, bias_k and bias_v xavier-normal; in place."""
        for weight in ((self.in_proj_weight,) if self._qkv_same_embed_dim else
                       (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)):
            init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def _projections(self):
        """(weights, biases) of q, k and v, three of each (a bias may be None)."""
        if self._qkv_same_embed_dim:
            weights = joining.chunk(self.in_proj_weight, 3, 0)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        biases = ([None] * 3 if self.in_proj_bias is None
                  else joining.chunk(self.in_proj_bias, 3, 0))
        return weights, biases

    def _heads(self, x, batch, length):
        """(L, N, E) -> (N, heads, L, head_dim)."""
        x = movement.reshape(x, (length, batch, self.num_heads, self.head_dim))
        return movement.transpose(x, (1, 2, 0, 3))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        for name, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim),
                              ("value", value, self.vdim)):
            check_tensor("MultiheadAttention", t)
            if t.ndim not in (2, 3) or t.shape[-1] != size or t.ndim != query.ndim:
                layout = "(N, L, E)" if self.batch_first else "(L, N, E)"
                raise ValueError(f"MultiheadAttention: {name} must be {layout} or (L, E) like "
                                 f"the query, with E = {size}, got {t.shape}")
        if (query is key and key is value and not need_weights and attn_mask is None
                and key_padding_mask is None and self._packable()):
            return self._self_attention(query, is_causal), None
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
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"MultiheadAttention: key {key.shape} and value {value.shape} "
                             f"must have one sequence length and batch size")
        source = key.shape[0]
        mask = self._mask(attn_mask, key_padding_mask, batch, length, source)
        weights, biases = self._projections()
        q, k, v = (nnops.linear(t, w, b) for t, w, b in zip((query, key, value), weights, biases))
        if self.bias_k is not None:  # one more key and value, never masked
            k, v = (joining.cat([t, movement.broadcast_to(b, (1, batch, self.embed_dim))], 0)
                    for t, b in ((k, self.bias_k), (v, self.bias_v)))
            source, mask = source + 1, _pad_mask(mask)
        q, k, v = self._heads(q, batch, length), self._heads(k, batch, source), \
            self._heads(v, batch, source)
        if self.add_zero_attn:  # and a key and value of zeros
            zero = full((batch, self.num_heads, 1, self.head_dim), 0.0, k.dtype, k.device)
            k, v = joining.cat([k, zero], 2), joining.cat([v, zero], 2)
            source, mask = source + 1, _pad_mask(mask)
        p = self.dropout if self.training else 0.0
        # as PyTorch's: a row with every key masked out gives zeros, NaN with need_weights
        out, attn = attn_ops.attention(q, k, v, mask, False, is_causal, p,
                                       safe=not need_weights, weights=bool(need_weights))
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

    def _packable(self) -> bool:
        """Whether self-attention may take :meth:`_self_attention`'s one projection."""
        return (self._qkv_same_embed_dim and self.bias_k is None and not self.add_zero_attn
                and not (self.training and self.dropout > 0.0))

    def _self_attention(self, x, is_causal):
        """q = k = v = x, projected by one GEMM with ``in_proj_weight``, the heads
        viewed as (3, N, heads, L, head_dim) and attended by the fused hook; the output in
        x's own layout."""
        shape = x.shape
        first = self.batch_first and x.ndim == 3
        if x.ndim == 2:
            x = movement.reshape(x, (shape[0], 1, shape[1]))
        a, b = x.shape[:2]
        qkv = nnops.linear(x, self.in_proj_weight, self.in_proj_bias)
        qkv = movement.reshape(qkv, (a, b, 3, self.num_heads, self.head_dim))
        # (3, N, heads, L, head_dim) views: row-major matrices, which the hook takes as
        # they are (a contiguous copy of this layout cost as much as the attention)
        order = (2, 0, 3, 1, 4) if first else (2, 1, 3, 0, 4)
        qkv = movement.transpose(qkv, order)
        out = attn_ops.packed_attention(qkv, is_causal, order=order)  # (N, heads, L, E/heads)
        out = movement.transpose(out, (0, 2, 1, 3) if first else (2, 0, 1, 3))
        out = self.out_proj(movement.reshape(out, (a, b, self.embed_dim)))
        return movement.reshape(out, shape) if len(shape) == 2 else out

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
