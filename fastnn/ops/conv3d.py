"""3-D convolution as PyTorch's ``conv3d``, composed from the conv2d primitive (gradients
from the tape).

x (N, C_in, D, H, W), weight (C_out, C_in/groups, KD, KH, KW). Each depth tap a reads the
depth slices a dilation_d + t stride_d of the depth-padded input for output depth t;
those slices, folded into the batch, go through one conv2d with the tap's 2-D kernel,
and the KD results are summed: KD conv2d calls in all.
"""

from __future__ import annotations

import numbers

from fastnn.api.args import integer
from fastnn.ops import conv
from fastnn.ops.joining import pad
from fastnn.ops.movement import reshape
from fastnn.ops.selecting import slice_tensor
from fastnn.ops.shaping import permute
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def triple(op: str, name: str, value, minimum: int) -> tuple:
    """An int or three ints (each >= ``minimum``) as a triple."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,) * 3
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise ValueError(f"{op}: {name} must be an int or 3 ints, got {value!r}")
    return tuple(integer(op, name, v, minimum) for v in value)


def sides3(op: str, padding, kernel: tuple, dilation: tuple, stride: tuple) -> tuple:
    """``padding`` (int, triple, "same" or "valid") as ((before, after),) * 3."""
    spans = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    if isinstance(padding, str):
        return conv.side_padding(op, padding, spans, stride)
    return tuple((p, p) for p in triple(op, "padding", padding, 0))


def conv3d_sides(x: Tensor, weight: Tensor, stride: tuple, sides: tuple, dilation: tuple,
                 groups: int) -> Tensor:
    """conv3d without bias on checked arguments, padding per side."""
    n, c_in, depth = x.shape[:3]
    c_out, _, kd, kh, kw = weight.shape
    (front, back), rest = sides[0], sides[1:]
    out_depth = (depth + front + back - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if out_depth < 1:
        raise ValueError(f"conv3d: kernel depth {kd} with dilation {dilation[0]} does not fit "
                         f"an input depth {depth} padded by {(front, back)}")
    if front or back:
        x = pad(x, (0, 0, 0, 0, front, back))
    total = None
    for a in range(kd):
        start = a * dilation[0]
        starts = (0, 0, start, 0, 0)
        stops = (n, c_in, start + (out_depth - 1) * stride[0] + 1) + x.shape[3:]
        taken = slice_tensor(x, starts, stops, (1, 1, stride[0], 1, 1))
        planes = reshape(permute(taken, (0, 2, 1, 3, 4)), (n * out_depth, c_in) + x.shape[3:])
        tap = reshape(slice_tensor(weight, (0, 0, a, 0, 0), (c_out, weight.shape[1], a + 1, kh,
                                                             kw), (1,) * 5),
                      (c_out, weight.shape[1], kh, kw))
        out = conv.conv2d_raw(planes, tap, stride[1:], rest, dilation[1:], groups, op="conv3d")
        total = out if total is None else total + out
    total = reshape(total, (n, out_depth, c_out) + total.shape[2:])
    return permute(total, (0, 2, 1, 3, 4))


@public()
def conv3d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1,
           groups=1) -> Tensor:
    """PyTorch's conv3d: input (N, C_in, D, H, W) or (C_in, D, H, W), weight (C_out,
    C_in/groups, KD, KH, KW); stride, padding, dilation an int or 3 ints, padding also
    "same" (stride 1) or "valid"."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv3d: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim != 5 or input.ndim not in (4, 5):
        raise ValueError(f"conv3d: expected input (N, C_in, D, H, W) and weight (C_out, "
                         f"C_in/groups, KD, KH, KW), got shapes {input.shape} and "
                         f"{weight.shape}")
    stride = triple("conv3d", "stride", stride, 1)
    dilation = triple("conv3d", "dilation", dilation, 1)
    groups = integer("conv3d", "groups", groups)
    sides = sides3("conv3d", padding, weight.shape[2:], dilation, stride)
    unbatched = input.ndim == 4
    x = reshape(input, (1,) + input.shape) if unbatched else input
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError(f"conv3d: weight expects {weight.shape[1] * groups} input channels "
                         f"({weight.shape[1]} per group x {groups} groups) but the input has "
                         f"{x.shape[1]}")
    out = conv3d_sides(x, weight, stride, sides, dilation, groups)
    out = conv.with_bias("conv3d", out, bias, weight.shape[0], 3)
    return reshape(out, out.shape[1:]) if unbatched else out
