"""Backward rules of the indexing primitives and of writes through views (written with
primitives); the scans and the newer math are in :mod:`fastnn.autograd.rules_math`.

:mod:`fastnn.autograd.rules` merges :data:`RULES` into its own table.
"""

from __future__ import annotations

import math

from fastnn.autograd.rule_table import rule_into

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES
rule = rule_into(RULES)


def _expand(ops, grad, shape, axis, keepdims):
    """A reduced array reshaped to broadcast against ``shape`` (the kept dims put back)."""
    if keepdims:
        return grad
    kept = [1 if axis is None or d in axis else n for d, n in enumerate(shape)]
    return ops.reshape(grad, tuple(kept))


def zeros(ops, shape, like):
    """A contiguous zero array of ``shape`` with the dtype of ``like`` (a non-empty array);
    a rule gets no dtype name, so the zero is made from one element of ``like``."""
    rank = len(like.shape)
    one = ops.reshape(ops.slice(like, (0,) * rank, (1,) * rank, (1,) * rank), ())
    zero = ops.where(ops.less(one, one), one, 0.0)  # x < x is False for every x, NaN too
    return ops.contiguous(ops.broadcast_to(zero, shape))


def _zeros(ops, shape, spec):
    """Zeros of ``shape`` from the (dtype, device index) the forward pass recorded."""
    dtype, index = spec
    return ops.full(shape, 0.0, dtype, index)


@rule("slice")
def _slice(ops, node, grad):
    return _slice_grad(ops, grad, *node.attrs)


@rule("select")
def _select(ops, node, grad):
    """A slice without its int axes: the gradient gets them back, then the slice's rule."""
    shape, starts, stops, steps, spec, sliced = node.attrs
    return _slice_grad(ops, ops.reshape(grad, sliced), shape, starts, stops, steps, spec)


def _slice_grad(ops, grad, shape, starts, stops, steps, spec):
    cut = [a for a, n in enumerate(shape) if starts[a] or stops[a] != n or steps[a] != 1]
    if len(cut) == 1 and steps[cut[0]] == 1 and math.prod(grad.shape):
        # a run along one axis (x[:k], x[..., a:b]): the gradient is grad between two
        # zero blocks, one pass (zeros, a copy of them and the write were three)
        a = cut[0]
        parts = [_zeros(ops, shape[:a] + (n,) + shape[a + 1:], spec)
                 for n in (starts[a], shape[a] - stops[a])]
        pieces = [p for p in (parts[0], grad, parts[1]) if p.shape[a]]
        return (ops.cat(pieces, a) if len(pieces) > 1 else ops.contiguous(grad),)
    base = _zeros(ops, shape, spec)
    if not math.prod(grad.shape):
        return (base,)
    return (ops.slice_scatter(base, grad, starts, stops, steps),)


@rule("slice_scatter")
def _slice_scatter(ops, node, grad):
    starts, stops, steps = node.attrs
    part = ops.slice(grad, starts, stops, steps)
    grad_base = None
    if node.needs[0] and math.prod(part.shape):
        grad_base = ops.slice_scatter(grad, zeros(ops, part.shape, grad), starts, stops, steps)
    elif node.needs[0]:
        grad_base = grad
    return grad_base, (ops.contiguous(part) if node.needs[1] else None)


@rule("gather")
def _gather(ops, node, grad):
    """One scatter-add of the gradient into zeros shaped like the input."""
    index = node.saved[0]
    shape, axis, spec = node.attrs
    base = _zeros(ops, shape, spec)
    if not math.prod(grad.shape):
        return base, None
    if len(index.shape) == 1 and len(shape) != 1:  # index_select's 1-d index: spread it
        lined = tuple(index.shape[0] if d == axis else 1 for d in range(len(shape)))
        index = ops.broadcast_to(ops.reshape(index, lined), grad.shape)
    return ops.scatter_add(base, axis, index, grad), None


RULES["index_select"] = _gather  # the same, once its 1-d index is broadcast


@rule("scatter_add")
def _scatter_add(ops, node, grad):
    (index,) = node.saved
    axis = node.attrs
    return grad, None, (ops.gather(grad, axis, index) if node.needs[2] else None)


@rule("cat")
def _cat(ops, node, grad):
    sizes, axis = node.attrs
    rank = len(grad.shape)
    out, offset = [], 0
    for n in sizes:
        starts = tuple(offset if d == axis else 0 for d in range(rank))
        stops = tuple(offset + n if d == axis else grad.shape[d] for d in range(rank))
        out.append(ops.slice(grad, starts, stops, (1,) * rank))
        offset += n
    return tuple(out)


# ---------------------------------------------------------------- writes through views


@rule("as_strided")
def _as_strided(ops, node, grad):
    """A view read at flat positions of its base: the gradient is scattered back (summed
    where positions repeat)."""
    positions, shape, spec = node.attrs
    flat = _zeros(ops, (math.prod(shape),), spec)
    flat = ops.scatter_add(flat, 0, positions, ops.reshape(grad, (-1,)))
    return (ops.reshape(flat, shape),)


@rule("overwrite")
def _overwrite(ops, node, grad):
    """A write of values that read none of the old ones (zero_, fill_, copy_, uniform_ ...):
    the old history gets zeros, the written values (when they carry history) the gradient."""
    return _zeros(ops, tuple(grad.shape), node.attrs[1]), grad


@rule("assign")
def _assign(ops, node, grad):
    """The base after a write through a view: the overwritten positions take their gradient
    from the written values, the others from the old base."""
    positions, keep, shape, spec = node.attrs
    new_shape = tuple(node.inputs[1]._data.shape)
    flat = ops.reshape(grad, (math.prod(shape),))
    grad_old = ops.reshape(ops.where(keep, flat, 0.0), shape) if node.needs[0] else None
    grad_new = ops.reshape(ops.index_select(flat, 0, positions), new_shape) \
        if node.needs[1] else None
    return grad_old, grad_new
