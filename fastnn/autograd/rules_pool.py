"""Backward rules of the pooling hooks; :mod:`fastnn.autograd.rules` merges :data:`RULES`."""

from __future__ import annotations

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES


def _max_pool2d(ops, node, grad):
    x, out = node.saved
    return (ops.max_pool2d_backward(x, out, grad, *node.attrs),)


RULES["max_pool2d"] = _max_pool2d
