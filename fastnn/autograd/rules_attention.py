"""Backward rules of the attention hooks; :mod:`fastnn.autograd.rules` merges :data:`RULES`
and :mod:`fastnn.autograd.tensor_ops` :data:`TENSOR_RULES` (for create_graph).

``attention`` records q, k and v as three inputs; ``attention_packed`` one input qkv
(3, ..., L, E) holding q, k and v along its first axis (self-attention's one projection),
so that their gradients come back as one array, not three scattered into zeros.
"""

from __future__ import annotations

from fastnn.api import composite_attention

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES
TENSOR_RULES: dict = {}  # the same ops under create_graph


def _attention(ops, node, grad):
    q, k, v, weights = node.saved
    return ops.attention_backward(q, k, v, weights, grad, node.attrs[1])


def _attention_packed(ops, node, grad):
    """One gradient for qkv, laid out as qkv's storage (``order``: qkv is that storage's
    transpose), so that the layer's reshape back to its projection takes it as it is."""
    qkv, weights = node.saved
    return (ops.attention_packed_backward(qkv, weights, grad, node.attrs[1], node.attrs[3]),)


RULES["attention"] = _attention
RULES["attention_packed"] = _attention_packed


def _grads_on_tape(ops, q, k, v, mask, scale, grad):
    """The composite's gradients with the weights recomputed from q and k on the tape
    (the forward saved them as a raw array, which would be a constant)."""
    weights = composite_attention.attention_weights(ops, q, k, mask, scale)
    return composite_attention.attention_backward(ops, q, k, v, weights, grad, scale)


def _attention_tensor(ops, node, grad):
    mask, scale = node.attrs[:2]
    return _grads_on_tape(ops, *node.inputs, mask, scale, grad)


def _attention_packed_tensor(ops, node, grad):
    mask, scale, (dtype, index) = node.attrs[:3]
    (qkv,) = node.inputs
    grads = _grads_on_tape(ops, *composite_attention.unpack(ops, qkv), mask, scale, grad)
    shape = tuple(qkv.shape)
    out = ops.full(shape, 0.0, dtype, index)
    for i, g in enumerate(grads):
        start, stop = (i,) + (0,) * (len(shape) - 1), (i + 1,) + shape[1:]
        out = ops.slice_scatter(out, ops.reshape(g, (1,) + shape[1:]), start, stop,
                                (1,) * len(shape))
    return (out,)


TENSOR_RULES["attention"] = _attention_tensor
TENSOR_RULES["attention_packed"] = _attention_packed_tensor
