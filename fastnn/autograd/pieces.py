"""Slice gradients kept apart until their tensor's own rule runs: PyTorch's SplitBackward.

``q, k, v = x.split(d, -1)`` (or ``gates.chunk(4, 1)``) records one slice node a piece.
Each slice's rule alone gives a gradient of x's whole shape, the piece's between two
zero blocks, and the engine summed them: for k pieces, k full-size arrays and k - 1 adds
(nanoGPT's q/k/v: three (16, 64, 192) cats and two adds, ~0.37 ms a step). In the
engine's fast pass a run-along-one-axis slice instead hands the engine a :class:`Pieces`
(its gradient and where it goes); pieces of one tensor along one axis that do not
overlap gather in one, and become one array, a single ``cat`` with zeros only in the
gaps, when that tensor's rule is about to run or its gradient reaches a leaf. Anything
else (an overlap, another axis, a whole gradient added to pieces) makes the array first
and adds as before.
"""

from __future__ import annotations

import math


class Pieces:
    """Gradients of slices of one ``shape`` along ``axis``: ``parts`` [(start, stop,
    grad)], not overlapping; ``spec`` the forward's (dtype, device index) for the zeros
    of the gaps. ``shape`` is the whole gradient's (the engine's unbroadcast passes it)."""

    __slots__ = ("shape", "axis", "spec", "parts")

    def __init__(self, shape, axis, spec, parts):
        self.shape, self.axis, self.spec, self.parts = shape, axis, spec, parts

    def array(self, ops):
        """The whole gradient: the parts in order along the axis, zeros in the gaps."""
        axis, shape = self.axis, self.shape
        parts = sorted(self.parts, key=lambda p: p[0])
        blocks, at = [], 0
        for start, stop, grad in parts:
            if start > at:
                blocks.append(_zeros(ops, shape, axis, start - at, self.spec))
            blocks.append(grad)
            at = stop
        if at < shape[axis]:
            blocks.append(_zeros(ops, shape, axis, shape[axis] - at, self.spec))
        return ops.cat(blocks, axis) if len(blocks) > 1 else ops.contiguous(blocks[0])


def _zeros(ops, shape, axis, n, spec):
    dtype, index = spec
    return ops.full(shape[:axis] + (n,) + shape[axis + 1:], 0.0, dtype, index)


def of_slice(attrs, grad):
    """The slice node's gradient (``attrs`` its (shape, starts, stops, steps, spec)) as
    :class:`Pieces` when it is a step-1 run along one axis of a non-empty gradient (the
    cases :func:`fastnn.autograd.rules_indexing._slice_grad` pads with zeros); else None
    (the rule runs)."""
    shape, starts, stops, steps, spec = attrs
    cut = -1
    for a, n in enumerate(shape):
        if starts[a] or stops[a] != n or steps[a] != 1:
            if cut >= 0 or steps[a] != 1:
                return None
            cut = a
    if cut < 0 or not math.prod(grad.shape):
        return None
    return Pieces(shape, cut, spec, [(starts[cut], stops[cut], grad)])


def add(ops, prev, grad):
    """``prev + grad``, either or both :class:`Pieces`: pieces of one shape and axis that
    do not overlap are gathered (no arithmetic); otherwise both become arrays and add."""
    if type(prev) is Pieces and type(grad) is Pieces and prev.axis == grad.axis \
            and prev.shape == grad.shape and prev.spec == grad.spec \
            and not _overlap(prev.parts, grad.parts):
        prev.parts.extend(grad.parts)
        return prev
    if type(prev) is Pieces:
        prev = prev.array(ops)
    if type(grad) is Pieces:
        grad = grad.array(ops)
    return ops.add(prev, grad)


def _overlap(parts, others) -> bool:
    return any(a < d and c < b for a, b, _ in parts for c, d, _ in others)


def whole(ops, grad):
    """``grad`` as an array (a :class:`Pieces` made one)."""
    return grad.array(ops) if type(grad) is Pieces else grad
