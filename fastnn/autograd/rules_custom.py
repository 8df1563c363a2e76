"""Backward rules of custom Functions (:mod:`fastnn.autograd.function`): each delegates to
the record of its ``apply`` call, kept in the node's attrs."""

from __future__ import annotations


def _custom_function(ops, node, grad):
    """``Function.backward`` on the gradients of the call's outputs (see ``_Record``)."""
    return node.attrs.backward(grad)


def _custom_function_output(ops, node, grad):
    """One output of a several-output call: its gradient is kept for the call's node."""
    record, index = node.attrs
    return record.take(index, grad)


def _once_differentiable(ops, node, grad):
    raise RuntimeError(
        f"trying to differentiate twice a function that was marked with "
        f"@once_differentiable ({node.attrs}); call backward without create_graph=True, "
        f"or write that backward with differentiable fastnn ops and drop the decorator")


RULES = {
    "custom_function": _custom_function,
    "custom_function_output": _custom_function_output,
    "once_differentiable": _once_differentiable,
}
