"""2-D convolution on tensors (PyTorch's conv2d), and conv1d with padding a primitive lacks.

``conv2d`` takes stride, padding and dilation as an int or a pair, padding also
``"same"`` (stride 1; an even span pads one more after than before, as PyTorch)
or ``"valid"``. Its primitive takes padding per side, ((top, bottom), (left,
right)), so a 1-D convolution whose padding is not one number on both ends
(``"same"`` with an even span, causal) runs as conv2d on (N, C, 1, L) and needs no
copy; the reshapes are views.
"""

from __future__ import annotations

import numbers

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.autograd.engine import attach
from fastnn.ops.movement import reshape
from fastnn.ops.operands import same_dtype
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def pair(op: str, name: str, value, minimum: int) -> tuple:
    """An int or a pair of ints (each >= ``minimum``) as a pair."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    return tuple(integer(op, name, v, minimum) for v in value)


def same_padding(span: int) -> tuple:
    """(before, after) zeros that keep the length for a window of ``span`` = d*(k-1)+1."""
    total = span - 1
    return (total // 2, total - total // 2)


def side_padding(op: str, padding, spans: tuple, stride: tuple) -> tuple:
    """``padding`` (int, pair, "same" or "valid") as ((before, after), ...) per spatial axis.

    A pair of pairs is taken as given (each axis's (before, after)).
    """
    if isinstance(padding, str):
        if padding == "valid":
            return tuple((0, 0) for _ in spans)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
            return tuple(same_padding(s) for s in spans)
        raise ValueError(f"{op}: padding must be an int, a pair, 'same' or 'valid', "
                         f"got {padding!r}")
    if (isinstance(padding, (tuple, list)) and len(padding) == len(spans)
            and all(isinstance(p, (tuple, list)) for p in padding)):
        return tuple(pair(op, "padding", p, 0) for p in padding)
    if len(spans) == 1:
        return (pair(op, "padding", padding, 0) if isinstance(padding, (tuple, list))
                else (integer(op, "padding", padding, 0),) * 2,)
    return tuple((p, p) for p in pair(op, "padding", padding, 0))


def _check_input(op, x, weight, groups):
    x, weight = same_dtype(op, x, weight)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"{op}: expected x (N, C_in, H, W) and weight (C_out, C_in/groups, KH, "
                         f"KW), got shapes {x.shape} and {weight.shape}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected floating-point tensors, got {x._dtype.name}")
    c_in, c_out, c_in_g = x.shape[1], weight.shape[0], weight.shape[1]
    if c_in % groups or c_out % groups:
        raise ValueError(f"{op}: C_in={c_in} and C_out={c_out} must be divisible by "
                         f"groups={groups}")
    if c_in_g * groups != c_in:
        raise ValueError(f"{op}: weight expects {c_in_g * groups} input channels ({c_in_g} per "
                         f"group x {groups} groups) but x has {c_in}")
    return x, weight


def with_bias(op, out, bias, c_out, trailing):
    if bias is None:
        return out
    if not isinstance(bias, Tensor):
        raise TypeError(f"{op}: bias must be a Tensor or None, got {type(bias).__name__}")
    if bias.shape != (c_out,):
        raise ValueError(f"{op}: bias must have shape ({c_out},), got {bias.shape}")
    same_dtype(f"{op} (bias)", out, bias)
    return out + reshape(bias, (c_out,) + (1,) * trailing)


def conv2d_raw(x: Tensor, weight: Tensor, stride: tuple, padding: tuple, dilation: tuple,
               groups: int, op: str = "conv2d") -> Tensor:
    """The conv2d primitive on checked arguments (padding per side), on the tape."""
    x, weight = _check_input(op, x, weight, groups)
    sizes = []
    for axis in range(2):
        length, k = x.shape[2 + axis], weight.shape[2 + axis]
        before, after = padding[axis]
        size = (length + before + after - dilation[axis] * (k - 1) - 1) // stride[axis] + 1
        if k < 1 or size < 1:
            raise ShapeError(
                f"{op}: kernel {tuple(weight.shape[2:])} with dilation {dilation} does not fit "
                f"an input of size {tuple(x.shape[2:])} padded by {padding} (output size "
                f"{size} along axis {2 + axis})")
        sizes.append(size)
    attrs = (stride, padding, dilation, groups)
    data = x._device.ops.conv2d(x._data, weight._data, *attrs)
    return attach(Tensor._make(data, x._dtype, x._device), "conv2d", (x, weight),
                  (x._data, weight._data), attrs)


@public()
def conv2d(x: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation as PyTorch's conv2d: x (N, C_in, H, W), or one sample
    (C_in, H, W); weight (C_out, C_in/groups, KH, KW); stride, padding, dilation an int or
    a pair."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv2d: {name} must be a Tensor, got {type(t).__name__}")
    if x.ndim == 3 and weight.ndim == 4:  # one sample, as PyTorch's: a batch of one
        out = conv2d(reshape(x, (1,) + x.shape), weight, bias, stride, padding, dilation, groups)
        return reshape(out, out.shape[1:])
    stride = pair("conv2d", "stride", stride, 1)
    dilation = pair("conv2d", "dilation", dilation, 1)
    groups = integer("conv2d", "groups", groups)
    if weight.ndim != 4:
        raise ValueError(f"conv2d: weight must be (C_out, C_in/groups, KH, KW), got shape "
                         f"{weight.shape}")
    spans = tuple(d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:]))
    padding = side_padding("conv2d", padding, spans, stride)
    out = conv2d_raw(x, weight, stride, padding, dilation, groups)
    return with_bias("conv2d", out, bias, weight.shape[0], 2)


def conv1d_sides(x: Tensor, weight: Tensor, bias, stride: int, padding: tuple, dilation: int,
                 groups: int) -> Tensor:
    """conv1d with (before, after) zero padding, as conv2d over a height of 1."""
    if x.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"conv1d: expected x (N, C_in, L) and weight (C_out, C_in/groups, K), "
                         f"got shapes {getattr(x, 'shape', None)} and "
                         f"{getattr(weight, 'shape', None)}")
    n, c, length = x.shape
    w = reshape(weight, (weight.shape[0], weight.shape[1], 1, weight.shape[2]))
    out = conv2d_raw(reshape(x, (n, c, 1, length)), w, (1, stride), ((0, 0), tuple(padding)),
                     (1, dilation), groups, op="conv1d")
    out = reshape(out, (n, out.shape[1], out.shape[3]))
    return with_bias("conv1d", out, bias, weight.shape[0], 1)
