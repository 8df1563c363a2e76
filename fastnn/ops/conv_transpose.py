"""Transposed convolution and im2col as PyTorch's ``conv_transpose1d``, ``conv_transpose2d``,
``unfold`` and ``fold``, composed from the conv2d primitive (gradients from the tape).

A transposed convolution is the adjoint of a convolution: with weight (C_in, C_out/groups,
KH, KW), it spreads each input position over a kernel-sized patch of the output,
out size = (H - 1) stride - 2 padding + dilation (K - 1) + output_padding + 1 per axis.
Composed as: zeros inserted between input positions (stride - 1 of them), the border
padded by dilation (K - 1) - padding (output_padding more after; negative crops), then a
stride-1 conv2d with the kernel flipped and its in/out axes swapped per group.

Where output_padding is below the stride (PyTorch allows it up to the dilation) and the
padding within the kernel's span, the forward is instead the backend's conv2d_grad_input
hook, one call, with a core backward rule of two conv2d-family calls: 5.9x faster for a
training step (benchmarks/bench_vis.py).

``unfold`` (im2col) is a gather from the zero-padded input: (N, C, H, W) -> (N, C KH KW, L),
row c KH KW + i KW + j holding tap (i, j) of channel c at each of the L block positions.
``fold`` (col2im) is its adjoint, an index_add that sums overlapping taps.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.args import integer
from fastnn.autograd.engine import attach
from fastnn.ops import conv
from fastnn.ops.joining import pad
from fastnn.ops.movement import reshape, transpose
from fastnn.ops.operands import same_dtype
from fastnn.ops.scattering import index_add
from fastnn.ops.selecting import as_index, index_select_tensor
from fastnn.ops.shaping import flip
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full


def _pad_axis(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    """x zero-padded along ``axis`` (negative amounts crop)."""
    if not (before or after):
        return x
    widths = [0, 0] * (x.ndim - axis)
    widths[-2:] = [before, after]
    return pad(x, tuple(widths))


def _spread(x: Tensor, axis: int, stride: int) -> Tensor:
    """stride - 1 zeros inserted between consecutive entries along ``axis``."""
    n = x.shape[axis]
    if stride == 1 or n <= 1:
        return x
    shape = x.shape
    grown = _pad_axis(reshape(x, shape[:axis + 1] + (1,) + shape[axis + 1:]), axis + 1, 0,
                      stride - 1)
    merged = reshape(grown, shape[:axis] + (n * stride,) + shape[axis + 1:])
    return _pad_axis(merged, axis, 0, -(stride - 1))


def checked_raw(op: str, x: Tensor, weight: Tensor, stride, padding, output_padding, groups,
                dilation) -> tuple:
    """(x, weight in one dtype, the output's spatial size) of a transposed convolution of a
    batched input on checked window arguments; ValueError/TypeError naming ``op``."""
    c_in = weight.shape[0]
    if x.shape[1] != c_in or c_in % groups:
        raise ValueError(f"{op}: weight {weight.shape} expects {c_in} input channels "
                         f"divisible by groups={groups}, got input {x.shape}")
    x, weight = same_dtype(op, x, weight)
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected floating-point tensors, got {x._dtype.name}")
    size = tuple((n - 1) * s - 2 * p + d * (k - 1) + 1 + o for n, s, p, d, k, o in
                 zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], output_padding))
    if min(size) < 1:
        raise ValueError(f"{op}: input {x.shape} with kernel {tuple(weight.shape[2:])}, "
                         f"stride {stride}, padding {padding} and dilation {dilation} gives "
                         f"the empty output size {size}")
    return x, weight, size


def transpose_raw(x: Tensor, weight: Tensor, stride, padding, output_padding, groups,
                  dilation) -> Tensor:
    """conv_transpose2d on checked pairs (any output_padding >= 0), without bias."""
    c_in, c_out_g, kh, kw = weight.shape
    x, weight, size = checked_raw("conv_transpose2d", x, weight, stride, padding,
                                  output_padding, groups, dilation)
    if all(o < s and p < d * (k - 1) + 1 for o, s, p, d, k in
           zip(output_padding, stride, padding, dilation, weight.shape[2:])) and x.numel():
        return _as_grad_input(x, weight, size, stride, padding, dilation, groups)
    return composite_transpose(x, weight, stride, padding, output_padding, groups, dilation)


def composite_transpose(x: Tensor, weight: Tensor, stride, padding, output_padding, groups,
                        dilation) -> Tensor:
    """conv_transpose2d from pads and a conv2d (any output_padding and padding)."""
    c_in, c_out_g, kh, kw = weight.shape
    for axis in range(2):
        x = _spread(x, 2 + axis, stride[axis])
        border = dilation[axis] * (weight.shape[2 + axis] - 1) - padding[axis]
        x = _pad_axis(x, 2 + axis, border, border + output_padding[axis])
    w = reshape(weight, (groups, c_in // groups, c_out_g, kh, kw))
    w = reshape(transpose(w, (0, 2, 1, 3, 4)), (groups * c_out_g, c_in // groups, kh, kw))
    w = flip(w, (2, 3))
    return conv.conv2d_raw(x, w, (1, 1), ((0, 0), (0, 0)), dilation, groups,
                           op="conv_transpose2d")


def _as_grad_input(x, weight, size, stride, padding, dilation, groups) -> Tensor:
    """The transposed convolution as the backend's conv2d_grad_input, one call (1.7x faster
    than the composite's forward, and its backward two conv2d-sized calls)."""
    attrs = (tuple(stride), tuple((p, p) for p in padding), tuple(dilation), groups)
    data = x._device.ops.conv2d_grad_input(x._data, weight._data, size, *attrs)
    return attach(Tensor._make(data, x._dtype, x._device), "conv_transpose2d", (x, weight),
                  (x._data, weight._data), attrs)


def output_padding_for(op: str, x_size: tuple, output_size, kernel, stride, padding,
                       dilation) -> tuple:
    """The output_padding that gives ``output_size`` (its last two entries), as PyTorch's
    ``output_size=`` of ConvTranspose: each within [smallest, smallest + stride - 1]."""
    sizes = tuple(output_size)[-len(x_size):]
    if len(sizes) != len(x_size):
        raise ValueError(f"{op}: output_size must name the {len(x_size)} spatial sizes, got "
                         f"{output_size!r}")
    out = []
    for n, want, k, s, p, d in zip(x_size, sizes, kernel, stride, padding, dilation):
        least = (n - 1) * s - 2 * p + d * (k - 1) + 1
        if not least <= want < least + s:
            raise ValueError(f"{op}: requested an output size of {tuple(sizes)}, but valid "
                             f"sizes range from {least} to {least + s - 1} (for an input of "
                             f"{tuple(x_size)})")
        out.append(want - least)
    return tuple(out)


def _check(op: str, x, weight, rank: int):
    for name, t in (("input", x), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim != rank or x.ndim not in (rank - 1, rank):
        raise ValueError(f"{op}: expected input (N, C_in, *{rank - 2} spatial) and weight "
                         f"(C_in, C_out/groups, *kernel), got shapes {x.shape} and "
                         f"{weight.shape}")


@public()
def conv_transpose2d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1) -> Tensor:
    """PyTorch's conv_transpose2d: input (N, C_in, H, W) or (C_in, H, W), weight (C_in,
    C_out/groups, KH, KW); stride, padding, output_padding, dilation an int or a pair."""
    return transposed("conv_transpose2d", 2, conv.pair, transpose_raw, input, weight, bias,
                      stride, padding, output_padding, groups, dilation)


def transposed(op: str, dims: int, parse, raw, input, weight, bias, stride, padding,
               output_padding, groups, dilation) -> Tensor:
    """A ``dims``-d transposed convolution from PyTorch's arguments: checked, each window
    argument read by ``parse(op, name, value, default)``, a batch of one added to an
    unbatched input, ``raw`` run, the bias added."""
    _check(op, input, weight, dims + 2)
    stride = parse(op, "stride", stride, 1)
    padding = parse(op, "padding", padding, 0)
    output_padding = parse(op, "output_padding", output_padding, 0)
    dilation = parse(op, "dilation", dilation, 1)
    groups = integer(op, "groups", groups)
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(f"{op}: output padding must be smaller than either stride or "
                         f"dilation, got output_padding={output_padding}, stride={stride}, "
                         f"dilation={dilation}")
    unbatched = input.ndim == dims + 1
    x = reshape(input, (1,) + input.shape) if unbatched else input
    out = raw(x, weight, stride, padding, output_padding, groups, dilation)
    out = conv.with_bias(op, out, bias, out.shape[1], dims)
    return reshape(out, out.shape[1:]) if unbatched else out


@public()
def conv_transpose1d(input: Tensor, weight: Tensor, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1) -> Tensor:
    """PyTorch's conv_transpose1d: input (N, C_in, L) or (C_in, L), weight (C_in,
    C_out/groups, K); stride, padding, output_padding, dilation ints."""
    _check("conv_transpose1d", input, weight, 3)
    args = [integer("conv_transpose1d", name, v[0] if isinstance(v, (tuple, list)) and
                    len(v) == 1 else v, low)
            for name, v, low in (("stride", stride, 1), ("padding", padding, 0),
                                 ("output_padding", output_padding, 0),
                                 ("dilation", dilation, 1))]
    stride, padding, output_padding, dilation = args
    x = reshape(input, input.shape[:-1] + (1, input.shape[-1]))
    w = reshape(weight, weight.shape[:2] + (1, weight.shape[2]))
    out = conv_transpose2d(x, w, bias, (1, stride), (0, padding), (0, output_padding),
                           groups, (1, dilation))
    return reshape(out, out.shape[:-2] + (out.shape[-1],))


def _block_index(size: tuple, kernel, dilation, padding, stride) -> tuple:
    """(flat positions in the padded (H + 2 ph) x (W + 2 pw) grid of every (tap, block)
    pair, tap-major as PyTorch's column layout; the block counts)."""
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1
              for n, p, d, k, s in zip(size, padding, dilation, kernel, stride)]
    width = size[1] + 2 * padding[1]
    rows = (np.arange(kernel[0])[:, None, None, None] * dilation[0]
            + np.arange(blocks[0])[None, None, :, None] * stride[0])
    cols = (np.arange(kernel[1])[None, :, None, None] * dilation[1]
            + np.arange(blocks[1])[None, None, None, :] * stride[1])
    return (rows * width + cols).reshape(-1), blocks


def _im2col_args(op, kernel_size, dilation, padding, stride):
    return (conv.pair(op, "kernel_size", kernel_size, 1), conv.pair(op, "dilation", dilation, 1),
            conv.pair(op, "padding", padding, 0), conv.pair(op, "stride", stride, 1))


@public()
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """PyTorch's unfold (im2col): sliding blocks of (N, C, H, W) or (C, H, W) as columns,
    (N, C KH KW, L) with L the number of block positions; a gather, so each output is one
    input value (a NaN spreads nowhere else)."""
    kernel, dilation, padding, stride = _im2col_args("unfold", kernel_size, dilation, padding,
                                                     stride)
    if not isinstance(input, Tensor) or input.ndim not in (3, 4):
        raise ValueError(f"unfold: expected a 3-D or 4-D input Tensor, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    unbatched = input.ndim == 3
    x = reshape(input, (1,) + input.shape) if unbatched else input
    n, c = x.shape[:2]
    index, blocks = _block_index(x.shape[2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise ValueError(f"unfold: kernel {kernel} with dilation {dilation} does not fit an "
                         f"input of spatial size {tuple(x.shape[2:])} padded by {padding}")
    padded = pad(x, (padding[1], padding[1], padding[0], padding[0]))
    flat = reshape(padded, (n, c, padded.shape[2] * padded.shape[3]))
    picked = index_select_tensor(flat, 2, as_index("unfold", index, x._device))
    out = reshape(picked, (n, c * kernel[0] * kernel[1], blocks[0] * blocks[1]))
    return reshape(out, out.shape[1:]) if unbatched else out


@public()
def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """PyTorch's fold (col2im): columns (N, C KH KW, L) or (C KH KW, L) summed back into
    (N, C, H, W) with (H, W) = ``output_size``; the adjoint of :func:`unfold`."""
    kernel, dilation, padding, stride = _im2col_args("fold", kernel_size, dilation, padding,
                                                     stride)
    size = conv.pair("fold", "output_size", output_size, 1)
    if not isinstance(input, Tensor) or input.ndim not in (2, 3):
        raise ValueError(f"fold: expected a 2-D or 3-D input Tensor, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    unbatched = input.ndim == 2
    x = reshape(input, (1,) + input.shape) if unbatched else input
    taps = kernel[0] * kernel[1]
    index, blocks = _block_index(size, kernel, dilation, padding, stride)
    if x.shape[1] % taps or min(blocks) < 1 or x.shape[2] != math.prod(blocks):
        count = math.prod(max(b, 0) for b in blocks)
        raise ValueError(f"fold: expected input (N, C * {taps}, {count}) for kernel {kernel} "
                         f"and output_size {size}, got {input.shape}")
    n, c = x.shape[0], x.shape[1] // taps
    grid = (size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    base = full((n, c, grid[0] * grid[1]), 0.0, dtype=x.dtype, device=x.device)
    summed = index_add(base, 2, as_index("fold", index, x._device),
                       reshape(x, (n, c, taps * x.shape[2])))
    out = pad(reshape(summed, (n, c) + grid),
              (-padding[1], -padding[1], -padding[0], -padding[0]))
    return reshape(out, out.shape[1:]) if unbatched else out
