"""TransformerEncoderLayer and TransformerEncoder, as PyTorch's (names, defaults, layout).

Post-norm (default): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
Pre-norm (``norm_first``): x = x + sa(norm1(x)); x = x + ff(norm2(x)).
sa(x) = dropout1(self_attn(x, x, x)); ff(x) = dropout2(linear2(dropout(act(linear1(x))))).
``bias=False`` drops the biases of every Linear, attention and LayerNorm, as PyTorch's.
``is_causal=True`` masks each position's later ones (with a mask given too, both apply;
PyTorch takes it as a hint that the mask is causal, so with a causal mask they agree).
``reverse`` comes from the tape. The decoder and ``Transformer``: :mod:`transformer_decoder`.
"""

from __future__ import annotations

import copy

from fastnn.api.args import integer
from fastnn.nn.activation import Dropout
from fastnn.nn.linear import Linear
from fastnn.nn.lists import ModuleList
from fastnn.nn.module import Module, tape_reverse
from fastnn.nn.multihead_attention import MultiheadAttention
from fastnn.nn.norm import LayerNorm
from fastnn.nn.transformer_nested import nested_padding, nested_path_refusal, takes_nested_path
from fastnn.ops import activations

_ACTIVATIONS = {"relu": activations.relu, "gelu": activations.gelu}


def activation_fn(owner: str, activation):
    """'relu', 'gelu' or a callable (a function or a module), as PyTorch's layers take it."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{owner}: activation must be 'relu', 'gelu' or a callable, got "
                             f"{activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"{owner}: activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def layer_norm(d_model: int, eps: float, bias: bool, kw: dict) -> LayerNorm:
    """The LayerNorm of a transformer layer: without a bias where the layer has none."""
    # NOTE: bias= is passed only when False, so that this works with a LayerNorm that does
    # not take it yet (then bias=False fails loudly rather than loading differently)
    return LayerNorm(d_model, eps, **kw) if bias else LayerNorm(d_model, eps, bias=False, **kw)


def is_causal_flag(is_causal) -> bool:
    """PyTorch's ``is_causal=None`` (detect from the mask) as a flag: a mask is applied as
    given, so a detected causal mask needs nothing more."""
    return bool(is_causal)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        d_model = integer("TransformerEncoderLayer", "d_model", d_model)
        dim_feedforward = integer("TransformerEncoderLayer", "dim_feedforward", dim_feedforward)
        activation = activation_fn("TransformerEncoderLayer", activation)
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first,
                                            **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = layer_norm(d_model, layer_norm_eps, bias, kw)
        self.norm2 = layer_norm(d_model, layer_norm_eps, bias, kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.batch_first = bool(batch_first)

    # the blocks have PyTorch's names and arguments: a subclass that overrides them (to
    # return the attention weights, say) changes what forward computes, as there
    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        out, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask,
                                need_weights=False, attn_mask=attn_mask, is_causal=is_causal)
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def reverse(self, x, grad_out, **masks):
        """dL/dsrc and dL/dparams for dL/d(output), the masks given, from the tape."""
        return tape_reverse(self, lambda t: self(t, **masks), x, grad_out)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ...), then ``norm``.

    ``enable_nested_tensor`` and ``mask_check`` are PyTorch's: where PyTorch's encoder
    would run on nested tensors (eval, a ``src_key_padding_mask``, nothing to
    differentiate), the padded frames of the output are zero before ``norm``, as there
    (:mod:`fastnn.nn.transformer_nested`)."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a fastnn Module, got "
                            f"{type(encoder_layer).__name__}")
        self.num_layers = integer("TransformerEncoder", "num_layers", num_layers)
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(self.num_layers)])
        self.norm = norm
        self.enable_nested_tensor = bool(enable_nested_tensor)
        self.use_nested_tensor = (self.enable_nested_tensor
                                  and isinstance(encoder_layer, TransformerEncoderLayer)
                                  and not nested_path_refusal(encoder_layer))
        self.mask_check = bool(mask_check)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        padding, zeroed = src_key_padding_mask, None
        if takes_nested_path(self, src, mask, padding):
            padding, zeroed = nested_padding(padding, getattr(self, "mask_check", True))
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=padding,
                      is_causal=is_causal_flag(is_causal))
        if zeroed is not None:
            x = x.masked_fill(zeroed.unsqueeze(-1), 0.0)
        return x if self.norm is None else self.norm(x)

    def reverse(self, x, grad_out, **masks):
        """dL/dsrc and dL/dparams for dL/d(output), the masks given, from the tape."""
        return tape_reverse(self, lambda t: self(t, **masks), x, grad_out)
