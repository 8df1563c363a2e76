"""The composites of the pooling hooks, written with primitives.

Windows that tile the input (stride = kernel, no padding, no dilation, sizes divisible):
one max over a (N, C, OH, KH, OW, KW) reshape, and a backward of a few whole-array ops.
Any other windows: one strided slice of the input per window tap (no padded copy: each tap
reads only the output rows and columns whose position it covers lies inside the input),
maxima and masks over those slices, written back with slice_scatter."""

from __future__ import annotations

import math


def taps(size, kernel, stride, padding, dilation, out_size):
    """Per tap (a, b): ((i0, i1), (j0, j1)) the output range it covers inside the input,
    and (rows, cols) the input (start, stop, step) slices read for it; empty ranges left out."""
    per_axis = []
    for n, k, s, p, d, o in zip(size, kernel, stride, padding, dilation, out_size):
        axis = []
        for a in range(k):
            offset = a * d - p  # input position of output i: i * s + offset
            first = -(offset // s) if offset < 0 else 0  # the first i with a position >= 0
            last = min(o, (n - 1 - offset) // s + 1) if offset <= n - 1 else 0
            if last > first:
                start = first * s + offset
                axis.append(((first, last), (start, start + (last - first - 1) * s + 1, s)))
        per_axis.append(axis)
    return [((ri, ci), (rs, cs)) for ri, rs in per_axis[0] for ci, cs in per_axis[1]]


def _const_like(ops, x, value):
    """A (1, 1, 1, 1) array of x's dtype holding ``value`` (from x's first element, whatever
    it holds: greater(e, e) is False even for NaN)."""
    e = ops.slice(x, (0, 0, 0, 0), (1, 1, 1, 1), (1, 1, 1, 1))
    return ops.where(ops.greater(e, e), e, value)


def _full_like(ops, x, shape, value):
    if not math.prod(shape) or not math.prod(x.shape):
        empty = ops.slice(x, (0, 0, 0, 0), (0, 0, 0, 0), (1, 1, 1, 1))
        return ops.contiguous(ops.reshape(empty, shape))
    return ops.contiguous(ops.broadcast_to(_const_like(ops, x, value), shape))


def _region(ops, a, rows, cols):
    n, c = a.shape[:2]
    return ops.slice(a, (0, 0, rows[0], cols[0]), (n, c, rows[1], cols[1]),
                     (1, 1, rows[2], cols[2]))


def _window(ops, a, ri, ci, write=None):
    """The output sub-block ``a[:, :, i0:i1, j0:j1]`` (or ``a`` with ``write`` put there)."""
    n, c = a.shape[:2]
    starts, stops, steps = (0, 0, ri[0], ci[0]), (n, c, ri[1], ci[1]), (1, 1, 1, 1)
    if write is None:
        return ops.slice(a, starts, stops, steps)
    return ops.slice_scatter(a, write, starts, stops, steps)


def _tiling(x_shape, kernel, stride, padding, dilation, output_size):
    return (tuple(stride) == tuple(kernel) and tuple(padding) == (0, 0)
            and tuple(dilation) == (1, 1)
            and all(n == o * k for n, o, k in zip(x_shape[2:], output_size, kernel)))


def _tiles(ops, a, kernel, output_size):
    n, c = a.shape[:2]
    return ops.reshape(a, (n, c, output_size[0], kernel[0], output_size[1], kernel[1]))


def max_pool2d(ops, x, kernel, stride, padding, dilation, output_size):
    shape = tuple(x.shape[:2]) + tuple(output_size)
    if _tiling(x.shape, kernel, stride, padding, dilation, output_size) and math.prod(shape):
        return ops.max(_tiles(ops, x, kernel, output_size), (3, 5), False)
    out = _full_like(ops, x, shape, float("-inf"))
    if not math.prod(shape):
        return out
    for (ri, ci), (rows, cols) in taps(x.shape[2:], kernel, stride, padding, dilation,
                                       output_size):
        block = _window(ops, out, ri, ci)
        out = _window(ops, out, ri, ci, ops.maximum(block, _region(ops, x, rows, cols)))
    return out


def max_pool2d_backward(ops, x, out, grad, kernel, stride, padding, dilation):
    dx = _full_like(ops, x, tuple(x.shape), 0.0)
    if not math.prod(out.shape):
        return dx
    dtype = str(x.dtype)
    found = taps(x.shape[2:], kernel, stride, padding, dilation, out.shape[2:])
    # each window's gradient goes to one position, PyTorch's index: the first (row-major)
    # equal to its max, else (a NaN max, equal to nothing) its last NaN. waiting: 1 where
    # a window is not served yet; picks: per tap, 1 where it serves its window
    waiting = _full_like(ops, out, tuple(out.shape), 1.0)
    picks = [None] * len(found)
    for k in list(range(len(found))) + list(reversed(range(len(found)))):
        (ri, ci), (rows, cols) = found[k]
        region, wait = _region(ops, x, rows, cols), _window(ops, waiting, ri, ci)
        if picks[k] is None:
            match = ops.astype(ops.equal(region, _window(ops, out, ri, ci)), dtype)
        else:  # the second pass, backwards: 1 at a NaN (not equal to itself), else 0
            match = ops.neg(ops.sub(ops.astype(ops.equal(region, region), dtype), 1.0))
        hit = ops.mul(match, wait)
        waiting = _window(ops, waiting, ri, ci, ops.sub(wait, hit))
        picks[k] = hit if picks[k] is None else ops.add(picks[k], hit)
    n, c = dx.shape[:2]
    for ((ri, ci), (rows, cols)), pick in zip(found, picks):
        part = ops.where(ops.greater(pick, 0.5), _window(ops, grad, ri, ci), 0.0)
        starts, stops = (0, 0, rows[0], cols[0]), (n, c, rows[1], cols[1])
        steps = (1, 1, rows[2], cols[2])
        dx = ops.slice_scatter(dx, ops.add(ops.slice(dx, starts, stops, steps), part),
                               starts, stops, steps)
    return dx
