"""The reverse-mode tape: nodes recorded by ops, and an iterative backward pass.

Each differentiable op that sees an input requiring gradients attaches a
:class:`Node` to its output: the op's name, its input tensors, the raw arrays
its backward rule needs, and its attributes. ``backward`` sorts the nodes
topologically without recursion, runs each op's rule from
:mod:`fastnn.autograd.rules` once, sums the gradients of shared inputs,
reduces broadcast gradients back to the input's shape, and frees every node
as soon as it has been used.
"""

from __future__ import annotations

import numpy as np

from fastnn.autograd import grad_mode
from fastnn.autograd.rules import RULES

# The write clock: every in-place write stamps its storage with the next tick, and every
# node records the tick it was made at. A node whose inputs' storage was stamped later was
# recorded before a write into them (see check_saved). One int read per recorded op.
_clock = 0


def tick() -> int:
    """Advance the write clock and return the new stamp (called by every in-place write)."""
    global _clock
    _clock += 1
    return _clock


class Node:
    """One recorded op: enough to compute its inputs' gradients from its output's.

    ``parents`` holds each input's node *as it was when the op ran*: an in-place write later
    gives the written tensor a new node, and this op's gradient must still reach the old one
    (as PyTorch's edges point at grad_fns, not tensors).
    """

    __slots__ = ("op", "inputs", "needs", "parents", "saved", "attrs", "ops", "stamp",
                 "stale", "__weakref__")

    def __init__(self, op, inputs, saved, attrs, ops):
        self.op = op
        self.inputs = inputs
        # list comprehensions: a generator costs ~0.1 us more on every recorded op
        self.needs = tuple([t is not None and t._requires_grad for t in inputs])
        self.parents = tuple([t._node if t is not None else None for t in inputs])
        self.saved = saved
        self.attrs = attrs
        self.ops = ops
        self.stamp = _clock
        self.stale = None

    def __repr__(self) -> str:
        return f"<Node {self.op}>"


class _Shared:
    """The storage record of a gradient whose array may be shared: copy before writing."""

    version = 0
    copy_on_write = True
    views = None
    viewed = False


_SHARED = _Shared()


def check_finite(ops, array, what: str) -> None:
    """Raise FloatingPointError if ``array`` holds a NaN or Inf (anomaly mode)."""
    host = np.asarray(ops.to_numpy(array))
    if host.dtype.kind == "f" and not np.isfinite(host).all():
        raise FloatingPointError(f"detect_anomaly: {what} produced NaN or Inf")


def attach(out, op, inputs, saved=(), attrs=None):
    """Record ``op`` on ``out`` when grad mode is on and some input requires grad."""
    state = grad_mode._state
    if state.grad:
        for t in inputs:
            if t is not None and t._requires_grad:  # the slot: this runs on every op
                out._requires_grad = True
                out._node = Node(op, inputs, saved, attrs, out._device.ops)
                break
    if state.anomaly:
        check_finite(out._device.ops, out._data, f"the forward of {op!r}")
    return out


def unbroadcast(ops, grad, shape):
    """Sum ``grad`` over the axes that broadcasting added or stretched to reach ``shape``."""
    gshape = grad.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if axes:
        grad = ops.sum(grad, axes, False)
    return ops.reshape(grad, shape)


def _topological(root):
    """Nodes reachable from ``root``, each after every node that consumes it.

    Kahn's algorithm on consumer counts: a node is released only when all its
    consumers are done. (A depth-first order that marks nodes when first seen
    can place a shared node before one of its consumers and lose gradient.)
    """
    consumers, stack = {id(root): 0}, [root]
    while stack:
        node = stack.pop()
        if node.inputs is None:
            raise RuntimeError(
                f"backward through the graph a second time (at {node.op!r}): the graph "
                "is freed by the first backward; recompute the forward pass"
            )
        for child in node.parents:
            if child is not None:
                key = id(child)
                if key not in consumers:
                    consumers[key] = 0
                    stack.append(child)
                consumers[key] += 1
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for child in node.parents:
            if child is not None:
                consumers[id(child)] -= 1
                if consumers[id(child)] == 0:
                    ready.append(child)
    return order


def backward(tensor, grad_data) -> None:
    """Propagate ``grad_data`` (a raw array shaped like ``tensor``) to every leaf."""
    make = type(tensor)._make  # the tensor class lives above this layer: never import it
    root = tensor._node
    if root is None:
        _accumulate(tensor, grad_data, make)
        return
    anomaly = grad_mode.is_anomaly_enabled()
    grads = {id(root): grad_data}
    with grad_mode.no_grad():
        for node in _topological(root):
            grad_out = grads.pop(id(node), None)
            if grad_out is None:
                continue
            if node.stamp != _clock:
                check_saved(node)
            in_grads = RULES[node.op](node.ops, node, grad_out)
            for t, child, needed, g in zip(node.inputs, node.parents, node.needs, in_grads):
                if not needed or g is None:
                    continue
                if anomaly:
                    check_finite(node.ops, g, f"the backward of {node.op!r}")
                g = unbroadcast(t._device.ops, g, t._data.shape)
                if child is None:
                    _accumulate(t, g, make)
                else:
                    key = id(child)
                    prev = grads.get(key)
                    grads[key] = g if prev is None else child.ops.add(prev, g)
            # free the graph as we go: the saved arrays are no longer needed
            node.inputs = node.saved = node.attrs = None


def check_saved(node) -> None:
    """RuntimeError when an array that ``node``'s rule reads was overwritten in place after
    the node was recorded (PyTorch's version-counter check)."""
    if node.stale is not None:
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"in-place operation: the output of {node.op!r} (shape {node.stale}) was written "
            f"in place after {node.op!r} saved it for backward; write into a copy instead "
            f"(y = y.clone() before the in-place op, or use the out-of-place form)")
    if not node.saved:
        return  # the rule reads no array of its inputs (add, reshape, slice, sum, ...)
    for i, t in enumerate(node.inputs):
        if t is None:
            continue
        base = t._view.base if t._view is not None else t
        storage = base._storage
        if storage is not None and storage.version > node.stamp:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by "
                f"an in-place operation: input {i} of {node.op!r} (a {t._dtype.name} tensor "
                f"of shape {tuple(t._data.shape)}) was written in place after {node.op!r} "
                f"saved it; clone it before the in-place op (x = x.clone()), or use the "
                f"out-of-place form (x = x + y instead of x += y)")


def _accumulate(leaf, g, make) -> None:
    if leaf._grad is None:
        grad = leaf._grad = make(g, leaf._dtype, leaf._device)
        # the array may be shared (several leaves, the caller's grad=): copied before the
        # first in-place write into it (p.grad.zero_(), p.grad += ...)
        grad._storage = _SHARED
    else:
        # out of place: a gradient array may be shared by several leaves
        leaf._grad._data = leaf._device.ops.add(leaf._grad._data, g)
