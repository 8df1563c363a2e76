"""Backward rules of the convolution primitives, their two gradients included, so that a
gradient through a convolution can be differentiated again (a gradient penalty).
:mod:`fastnn.autograd.rules` merges :data:`RULES`.

Each rule is the adjoint of a bilinear map. conv(x, w) gives the gradients
grad_input(g, w) and grad_weight(x, g); those two are bilinear too, and
<h, grad_input(g, w)> = <conv(h, w), g> = <h', grad_weight(h, g)> with h' = w, and
<h, grad_weight(x, g)> = <conv(x, h), g>, so every rule is written with the same
three hooks. ``attrs`` is always (stride, padding, dilation, groups).
"""

from __future__ import annotations

from fastnn.autograd.rule_table import rule_into

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES
rule = rule_into(RULES)


@rule("conv1d")
def _conv1d(ops, node, grad):
    x, weight = node.saved
    grad_x = grad_w = None
    if node.needs[0]:
        grad_x = ops.conv1d_grad_input(grad, weight, x.shape[2], *node.attrs)
    if node.needs[1]:
        grad_w = ops.conv1d_grad_weight(x, grad, weight.shape[2], *node.attrs)
    return grad_x, grad_w


@rule("conv1d_grad_input")
def _conv1d_grad_input(ops, node, grad):
    grad_out, weight = node.saved
    grad_g = grad_w = None
    if node.needs[0]:
        grad_g = ops.conv1d(grad, weight, *node.attrs)
    if node.needs[1]:
        grad_w = ops.conv1d_grad_weight(grad, grad_out, weight.shape[2], *node.attrs)
    return grad_g, grad_w


@rule("conv1d_grad_weight")
def _conv1d_grad_weight(ops, node, grad):
    x, grad_out = node.saved
    grad_x = grad_g = None
    if node.needs[0]:
        grad_x = ops.conv1d_grad_input(grad_out, grad, x.shape[2], *node.attrs)
    if node.needs[1]:
        grad_g = ops.conv1d(x, grad, *node.attrs)
    return grad_x, grad_g


@rule("conv2d")
def _conv2d(ops, node, grad):
    x, weight = node.saved
    attrs = node.attrs
    if node.needs[0] and node.needs[1]:
        return ops.conv2d_backward(x, weight, grad, *attrs)
    grad_x = grad_w = None
    if node.needs[0]:
        grad_x = ops.conv2d_grad_input(grad, weight, tuple(x.shape[2:]), *attrs)
    if node.needs[1]:
        grad_w = ops.conv2d_grad_weight(x, grad, tuple(weight.shape[2:]), *attrs)
    return grad_x, grad_w


@rule("conv2d_grad_input")
def _conv2d_grad_input(ops, node, grad):
    # y = conv2d_grad_input(x, w): the adjoint of a conv2d whose input is y's shape, so
    # dL/dx is that conv2d of grad, and dL/dw its weight gradient with grad as its input
    x, weight = node.saved
    grad_x = grad_w = None
    if node.needs[0]:
        grad_x = ops.conv2d(grad, weight, *node.attrs)
    if node.needs[1]:
        grad_w = ops.conv2d_grad_weight(grad, x, tuple(weight.shape[2:]), *node.attrs)
    return grad_x, grad_w


RULES["conv_transpose2d"] = _conv2d_grad_input  # recorded by F.conv_transpose2d


@rule("conv2d_grad_weight")
def _conv2d_grad_weight(ops, node, grad):
    x, grad_out = node.saved
    grad_x = grad_g = None
    if node.needs[0]:
        grad_x = ops.conv2d_grad_input(grad_out, grad, tuple(x.shape[2:]), *node.attrs)
    if node.needs[1]:
        grad_g = ops.conv2d(x, grad, *node.attrs)
    return grad_x, grad_g
