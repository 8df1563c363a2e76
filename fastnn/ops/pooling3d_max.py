"""PyTorch's ``adaptive_max_pool3d`` and ``max_unpool3d`` over x (N, C, D, H, W) or
(C, D, H, W).

Adaptive max pooling's windows are boxes, [floor(i L/out), ceil((i + 1) L/out)) per axis
as in :mod:`fastnn.ops.pooling_max`, so the index of each box's max is found in two
stages without the tape: the 2-D op's indices per depth plane, then the 1-D op's over depth
of those planes' maxima. Both stages take the first maximum (the last NaN), so the pair is
the first maximum of the box in row-major (d, h, w) order (the last NaN), as PyTorch's CPU
kernel. The output is a gather of x at those flat indices d H W + h W + w, so each
window's gradient goes to that one element, as PyTorch's (ties included).

``max_unpool3d`` is :mod:`fastnn.ops.pooling_max`'s unpooling over three axes.
"""

from __future__ import annotations

from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.conv3d import triple
from fastnn.ops.gathering import take_along_dim
from fastnn.ops.movement import reshape
from fastnn.ops.pooling3d import _batched
from fastnn.ops.pooling_max import _unpool, adaptive_max_pool1d, adaptive_max_pool2d
from fastnn.ops.shaping import permute
from fastnn.ops.table import public


def _output_size(op: str, output_size, spatial) -> tuple:
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 3:
            raise ValueError(f"{op}: output_size must be an int or 3 values, got "
                             f"{output_size!r}")
        size = tuple(n if o is None else o for o, n in zip(output_size, spatial))
    else:
        size = output_size
    return triple(op, "output_size", size, 1)


@public()
def adaptive_max_pool3d(x, output_size, return_indices=False):
    """Max pooling of x (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (an int, or a
    triple whose None keeps that size), PyTorch's adaptive_max_pool3d; with
    ``return_indices`` also the int64 flat index d H W + h W + w of each max."""
    x, added = _batched("adaptive_max_pool3d", x)
    n, c, d, h, w = x.shape
    od, oh, ow = _output_size("adaptive_max_pool3d", output_size, (d, h, w))
    with no_grad():
        planes, plane_index = adaptive_max_pool2d(reshape(x.detach(), (n, c * d, h, w)),
                                                  (oh, ow), return_indices=True)
        planes = reshape(planes, (n, c, d, oh * ow))
        plane_index = reshape(plane_index, (n, c, d, oh * ow))
        columns = reshape(permute(planes, (0, 1, 3, 2)), (n, c * oh * ow, d))
        _, depth = adaptive_max_pool1d(columns, od, return_indices=True)
        depth = permute(reshape(depth, (n, c, oh * ow, od)), (0, 1, 3, 2))
        index = depth * (h * w) + take_along_dim(plane_index, depth, axis=2)
        index = reshape(index, (n, c, od * oh * ow))
    out = take_along_dim(reshape(x, (n, c, d * h * w)), index, axis=2)
    out, index = reshape(out, (n, c, od, oh, ow)), reshape(index, (n, c, od, oh, ow))
    if added:
        out, index = reshape(out, out.shape[1:]), reshape(index, index.shape[1:])
    return (out, index) if return_indices else out


@public()
def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: zeros of the (default) input size with each value of
    x (N, C, D, H, W) or (C, D, H, W) written at its flat index d H W + h W + w from
    ``indices``, PyTorch's max_unpool3d."""
    return _unpool("max_unpool3d", x, indices, 3, kernel_size, stride, padding, output_size)
