"""Backward rules of the pooling, batch-norm and layer-norm hooks; :mod:`fastnn.autograd.rules`
merges :data:`RULES`."""

from __future__ import annotations

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES


def _max_pool2d(ops, node, grad):
    x, out = node.saved
    return (ops.max_pool2d_backward(x, out, grad, *node.attrs),)


RULES["max_pool2d"] = _max_pool2d


def _batch_norm(ops, node, grad):
    x, weight, mean, var = node.saved
    return ops.batch_norm_backward(x, weight, mean, var, grad, node.attrs)


RULES["batch_norm_train"] = _batch_norm


def _layer_norm(ops, node, grad):
    x, weight, mean, rstd = node.saved
    return ops.layer_norm_backward(x, weight, mean, rstd, grad)


RULES["layer_norm_train"] = _layer_norm
