"""TransformerEncoderLayer and TransformerEncoder, as PyTorch's (names, defaults, layout).

Post-norm (default): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
Pre-norm (``norm_first``): x = x + sa(norm1(x)); x = x + ff(norm2(x)).
sa(x) = dropout1(self_attn(x, x, x)); ff(x) = dropout2(linear2(dropout(act(linear1(x))))).
``reverse`` comes from the tape.
"""

from __future__ import annotations

import copy

from fastnn.api.args import integer
from fastnn.nn.activation import Dropout
from fastnn.nn.attention import MultiheadAttention
from fastnn.nn.linear import Linear
from fastnn.nn.lists import ModuleList
from fastnn.nn.module import Module
from fastnn.nn.norm import LayerNorm
from fastnn.ops import activations

_ACTIVATIONS = {"relu": activations.relu, "gelu": activations.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 dtype=None, device=None):
        super().__init__()
        d_model = integer("TransformerEncoderLayer", "d_model", d_model)
        dim_feedforward = integer("TransformerEncoderLayer", "dim_feedforward", dim_feedforward)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' "
                                 f"or a callable, got {activation!r}")
            activation = _ACTIVATIONS[activation]
        elif not callable(activation):
            raise TypeError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' or a "
                            f"callable, got {type(activation).__name__}")
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, **kw)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.batch_first = bool(batch_first)

    def _sa(self, x, mask, padding, is_causal):
        out, _ = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)
        return self.dropout1(out)

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ...), then ``norm``."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm=None):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a fastnn Module, got "
                            f"{type(encoder_layer).__name__}")
        self.num_layers = integer("TransformerEncoder", "num_layers", num_layers)
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(self.num_layers)])
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        return x if self.norm is None else self.norm(x)
