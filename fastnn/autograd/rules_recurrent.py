"""Backward rules of the fused recurrent-layer nodes (:mod:`fastnn.ops.recurrent_fused`):
each calls its backend's backward hook once for the whole sequence, telling it whether
the sequence's input needs a gradient (``node.needs[0]``: no input GEMM where not)."""

from __future__ import annotations

from fastnn.autograd.rule_table import rule_into

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES
rule = rule_into(RULES)


@rule("lstm_sequence")
def _lstm_sequence(ops, node, grad):
    """grad (T + 1, N, H): every step's h, then the last c (the node's packed output)."""
    x, h0, c0, w_ih, w_hh, out, gates, cells = node.saved
    steps, n, h = out.shape
    grad_out = ops.slice(grad, (0, 0, 0), (steps, n, h), (1, 1, 1))
    grad_c = ops.reshape(ops.slice(grad, (steps, 0, 0), (steps + 1, n, h), (1, 1, 1)), (n, h))
    dx, dh0, dc0, dw_ih, dw_hh, dbias = ops.lstm_layer_backward(
        x, h0, c0, w_ih, w_hh, out, gates, cells, ops.contiguous(grad_out), grad_c,
        node.needs[0])
    grads = (dx, dh0, dc0, dw_ih, dw_hh)
    return grads + (dbias, dbias)[:len(node.inputs) - len(grads)]


@rule("gru_sequence")
def _gru_sequence(ops, node, grad):
    x, h0, w_ih, w_hh, out, saved = node.saved
    grads = ops.gru_layer_backward(x, h0, w_ih, w_hh, out, saved, ops.contiguous(grad),
                                   node.needs[0])
    return tuple(grads[:len(node.inputs)])
