"""ConvTranspose1d, ConvTranspose2d and ConvTranspose3d: PyTorch's transposed convolution
layers, over :mod:`fastnn.ops.conv_transpose` and :mod:`fastnn.ops.conv_transpose3d` (their
``reverse`` is the tape's).

weight (in_channels, out_channels // groups, *kernel_size), class connective; bias
(out_channels,), class bias. Both start as U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with PyTorch's
fan_in of that weight: out_channels // groups * prod(kernel_size).
"""

from __future__ import annotations

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.nn.bases import _ConvNd
from fastnn.nn.module import check_tensor
from fastnn.ops import conv_transpose as ops
from fastnn.ops import conv_transpose3d as ops3


def _tuple(op: str, name: str, value, rank: int, minimum: int) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) != rank:
            raise ValueError(f"{op}: {name} must be an int or {rank} ints, got {value!r}")
        return tuple(integer(op, name, v, minimum) for v in value)
    return (integer(op, name, value, minimum),) * rank


class _ConvTranspose(_ConvNd):
    RANK = 2  # spatial axes

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__()
        name, rank = type(self).__name__, self.RANK
        self.in_channels = integer(name, "in_channels", in_channels)
        self.out_channels = integer(name, "out_channels", out_channels)
        self.kernel_size = _tuple(name, "kernel_size", kernel_size, rank, 1)
        self.stride = _tuple(name, "stride", stride, rank, 1)
        self.padding = _tuple(name, "padding", padding, rank, 0)
        self.output_padding = _tuple(name, "output_padding", output_padding, rank, 0)
        self.dilation = _tuple(name, "dilation", dilation, rank, 1)
        self.groups = integer(name, "groups", groups)
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported (as PyTorch), "
                             f"got {padding_mode!r}")
        self.padding_mode = padding_mode
        if any(o >= s and o >= d for o, s, d in zip(self.output_padding, self.stride,
                                                    self.dilation)):
            raise ValueError(f"{name}: output_padding {self.output_padding} must be smaller "
                             f"than either stride {self.stride} or dilation {self.dilation}")
        self._init_parameters((self.in_channels, self.out_channels // self.groups)
                              + self.kernel_size, bias, dtype, device)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        zeros = (0,) * self.RANK
        if self.padding != zeros:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.RANK:
            text += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        return text + ("" if self.bias is not None else ", bias=False")

    def forward(self, x, output_size=None):
        name = type(self).__name__
        check_tensor(name, x)
        rank = self.RANK
        if x.ndim not in (rank + 1, rank + 2) or x.shape[-rank - 1] != self.in_channels:
            raise ShapeError(f"{name}({self.in_channels}, {self.out_channels}): expected input "
                             f"(N, {self.in_channels}, *{rank} spatial) or unbatched, got "
                             f"{x.shape}")
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = ops.output_padding_for(name, x.shape[-rank:], output_size,
                                                    self.kernel_size, self.stride,
                                                    self.padding, self.dilation)
        fn = {1: ops.conv_transpose1d, 2: ops.conv_transpose2d,
              3: ops3.conv_transpose3d}[rank]
        unwrap = (lambda v: v) if rank > 1 else (lambda v: v[0])
        return fn(x, self.weight, self.bias, unwrap(self.stride), unwrap(self.padding),
                  unwrap(output_padding), self.groups, unwrap(self.dilation))


class ConvTranspose1d(_ConvTranspose):
    """PyTorch's ConvTranspose1d over (N, C_in, L) or (C_in, L); ``forward(x, output_size)``
    picks the output_padding that gives ``output_size``."""

    RANK = 1


class ConvTranspose2d(_ConvTranspose):
    """PyTorch's ConvTranspose2d over (N, C_in, H, W) or (C_in, H, W); ``forward(x,
    output_size)`` picks the output_padding that gives ``output_size``."""

    RANK = 2


class ConvTranspose3d(_ConvTranspose):
    """PyTorch's ConvTranspose3d over (N, C_in, D, H, W) or (C_in, D, H, W); ``forward(x,
    output_size)`` picks the output_padding that gives ``output_size``."""

    RANK = 3
