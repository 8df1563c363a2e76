"""TransformerDecoderLayer, TransformerDecoder and Transformer, as PyTorch's (names,
defaults, layout, masks).

A decoder layer, x = tgt and m = memory (the encoder's output):
Post-norm (default): x = norm1(x + sa(x)); x = norm2(x + mha(x, m)); x = norm3(x + ff(x)).
Pre-norm (``norm_first``): x = x + sa(norm1(x)); x = x + mha(norm2(x), m); x = x + ff(norm3(x)).
sa(x) = dropout1(self_attn(x, x, x)), mha(x, m) = dropout2(multihead_attn(x, m, m)),
ff(x) = dropout3(linear2(dropout(act(linear1(x))))).

Masks as :class:`MultiheadAttention`'s: ``tgt_mask`` (T, T) and ``memory_mask`` (T, S), bool
(True = masked out) or float (added); key padding masks (N, T) and (N, S).
:meth:`Transformer.generate_square_subsequent_mask` gives the causal float mask.
``reverse(x, grad_out, memory, **masks)`` of a decoder (layer) and
``reverse(src, grad_out, tgt, **masks)`` of a Transformer give the gradient of the first
input and of the parameters (memory / tgt held constant), from the tape.
"""

from __future__ import annotations

import copy

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.nn.activation import Dropout
from fastnn.nn.init import xavier_uniform_
from fastnn.nn.linear import Linear
from fastnn.nn.lists import ModuleList
from fastnn.nn.module import Module, check_tensor, tape_reverse
from fastnn.nn.multihead_attention import MultiheadAttention
from fastnn.nn.transformer import (
    TransformerEncoder,
    TransformerEncoderLayer,
    activation_fn,
    is_causal_flag,
    layer_norm,
)
from fastnn.ops import activations
from fastnn.ops.tensor import tensor


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the memory and a feed-forward block, each with a
    residual and a LayerNorm; ``forward(tgt, memory, ...)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=activations.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        name = "TransformerDecoderLayer"
        d_model = integer(name, "d_model", d_model)
        dim_feedforward = integer(name, "dim_feedforward", dim_feedforward)
        activation = activation_fn(name, activation)
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = layer_norm(d_model, layer_norm_eps, bias, kw)
        self.norm2 = layer_norm(d_model, layer_norm_eps, bias, kw)
        self.norm3 = layer_norm(d_model, layer_norm_eps, bias, kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.batch_first = bool(batch_first)

    # PyTorch's block names and arguments, so that a subclass's overrides are used
    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        out, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask,
                                need_weights=False, attn_mask=attn_mask, is_causal=is_causal)
        return self.dropout1(out)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        out, _ = self.multihead_attn(x, mem, mem, key_padding_mask=key_padding_mask,
                                     need_weights=False, attn_mask=attn_mask,
                                     is_causal=is_causal)
        return self.dropout2(out)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, bool(tgt_is_causal))
        mha = (memory_mask, memory_key_padding_mask, bool(memory_is_causal))
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), memory, *mha)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, memory, *mha))
        return self.norm3(x + self._ff_block(x))

    def reverse(self, x, grad_out, memory=None, **masks):
        """dL/dtgt and dL/dparams for dL/d(output), the memory (and masks) given and held
        constant, from the tape."""
        return _reverse_with(self, "memory", x, grad_out, memory, masks)


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` (``layers.0``, ...), then ``norm``."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm=None):
        super().__init__()
        if not isinstance(decoder_layer, Module):
            raise TypeError(f"TransformerDecoder: decoder_layer must be a fastnn Module, got "
                            f"{type(decoder_layer).__name__}")
        self.num_layers = integer("TransformerDecoder", "num_layers", num_layers)
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(self.num_layers)])
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=is_causal_flag(tgt_is_causal),
                      memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)

    def reverse(self, x, grad_out, memory=None, **masks):
        """dL/dtgt and dL/dparams for dL/d(output), the memory (and masks) given and held
        constant, from the tape."""
        return _reverse_with(self, "memory", x, grad_out, memory, masks)


class Transformer(Module):
    """An encoder-decoder transformer (``encoder``, ``decoder``, each with a final LayerNorm
    ``norm``); ``forward(src, tgt, ...)`` -> the decoder's output, shaped like tgt.

    Every parameter of two or more dims starts xavier-uniform, as PyTorch's. ``custom_encoder``
    / ``custom_decoder`` replace the built ones."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=activations.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = {"dtype": dtype, "device": device}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                layer_norm(d_model, layer_norm_eps, bias, kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                layer_norm(d_model, layer_norm_eps, bias, kw))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, bool(batch_first)

    def _reset_parameters(self) -> None:
        """PyTorch's init of a Transformer: every parameter of two or more dims
        xavier-uniform, in place."""
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        check_tensor("Transformer", src)
        check_tensor("Transformer", tgt)
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise RuntimeError(f"Transformer: the batch sizes of src {src.shape} and tgt "
                               f"{tgt.shape} must be equal (batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src {src.shape} and tgt "
                               f"{tgt.shape} must be equal to d_model {self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    def reverse(self, x, grad_out, tgt=None, **masks):
        """dL/dsrc and dL/dparams for dL/d(output), tgt (and masks) given and held constant,
        from the tape."""
        return _reverse_with(self, "tgt", x, grad_out, tgt, masks)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) causal float mask: 0 on and below the diagonal, -inf above."""
        sz = integer("Transformer.generate_square_subsequent_mask", "sz", sz, 0)
        host = np.triu(np.full((sz, sz), -np.inf), 1)
        return tensor(host, dtype=dtype or dtypes.get_default_dtype(), device=device)


def _reverse_with(module, what, x, grad_out, other, masks):
    name = type(module).__name__
    if other is None:
        raise TypeError(f"{name}.reverse: give the {what} too: "
                        f"reverse(x, grad_out, {what}, **masks)")
    other = check_tensor(name, other).detach()
    return tape_reverse(module, lambda t: module(t, other, **masks), x, grad_out)
