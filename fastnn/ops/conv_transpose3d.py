"""PyTorch's ``conv_transpose3d``, composed as :mod:`fastnn.ops.conv_transpose` composes
the 2-D one (gradients from the tape): stride - 1 zeros inserted between input positions
on each spatial axis, the border padded by dilation (K - 1) - padding (output_padding more
after; a negative amount crops), then a stride-1 :func:`~fastnn.ops.conv3d.conv3d` with the
kernel flipped and its in/out channel axes swapped per group.

Weight (C_in, C_out/groups, KD, KH, KW); out size per axis
(n - 1) stride - 2 padding + dilation (K - 1) + output_padding + 1.
"""

from __future__ import annotations

from fastnn.ops.conv3d import conv3d_sides, triple
from fastnn.ops.conv_transpose import _pad_axis, _spread, checked_raw, transposed
from fastnn.ops.movement import reshape, transpose
from fastnn.ops.shaping import flip
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def transpose3d_raw(x: Tensor, weight: Tensor, stride, padding, output_padding, groups,
                    dilation) -> Tensor:
    """conv_transpose3d of a batched input on checked triples, without bias."""
    c_in, c_out_g = weight.shape[:2]
    kernel = weight.shape[2:]
    x, weight, _ = checked_raw("conv_transpose3d", x, weight, stride, padding,
                                  output_padding, groups, dilation)
    for axis in range(3):
        x = _spread(x, 2 + axis, stride[axis])
        border = dilation[axis] * (kernel[axis] - 1) - padding[axis]
        x = _pad_axis(x, 2 + axis, border, border + output_padding[axis])
    w = reshape(weight, (groups, c_in // groups, c_out_g) + tuple(kernel))
    w = reshape(transpose(w, (0, 2, 1, 3, 4, 5)),
                (groups * c_out_g, c_in // groups) + tuple(kernel))
    w = flip(w, (2, 3, 4))
    return conv3d_sides(x, w, (1, 1, 1), ((0, 0),) * 3, tuple(dilation), groups)


@public()
def conv_transpose3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1) -> Tensor:
    """PyTorch's conv_transpose3d: input (N, C_in, D, H, W) or (C_in, D, H, W), weight
    (C_in, C_out/groups, KD, KH, KW); stride, padding, output_padding, dilation an int or 3
    ints."""
    return transposed("conv_transpose3d", 3, triple, transpose3d_raw, input, weight, bias,
                      stride, padding, output_padding, groups, dilation)
