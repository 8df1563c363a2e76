"""Conv3d: PyTorch's 3-D convolution layer over :func:`fastnn.ops.conv3d.conv3d` (its
``reverse`` is the tape's).

weight (out, in // groups, kd, kh, kw), class connective; bias (out,), class bias; both
U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in // groups * kd * kh * kw, as PyTorch.
"""

from __future__ import annotations

from fastnn.api.args import integer
from fastnn.nn.bases import _ConvNd
from fastnn.nn.conv_padding import check_mode, pad_input
from fastnn.nn.module import check_tensor
from fastnn.ops import autocasting, conv
from fastnn.ops import conv3d as ops


class Conv3d(_ConvNd):
    """PyTorch's Conv3d over (N, C, D, H, W) or (C, D, H, W); ``kernel_size``, ``stride``,
    ``dilation`` an int or 3 ints, ``padding`` also "same" (stride 1) or "valid"."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__()
        self.in_channels = integer("Conv3d", "in_channels", in_channels)
        self.out_channels = integer("Conv3d", "out_channels", out_channels)
        self.kernel_size = ops.triple("Conv3d", "kernel_size", kernel_size, 1)
        self.stride = ops.triple("Conv3d", "stride", stride, 1)
        self.dilation = ops.triple("Conv3d", "dilation", dilation, 1)
        self.groups = integer("Conv3d", "groups", groups)
        self.padding_mode = check_mode("Conv3d", padding_mode)
        self._sides = ops.sides3("Conv3d", padding, self.kernel_size, self.dilation,
                                 self.stride)
        self.padding = padding if isinstance(padding, str) else tuple(lo for lo, _ in
                                                                      self._sides)
        self._init_parameters((self.out_channels, self.in_channels // self.groups)
                              + self.kernel_size, bias, dtype, device)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0, 0):  # ("valid" printed, as PyTorch's)
            text += f", padding={self.padding}"
        if self.dilation != (1, 1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":  # (last, as PyTorch prints it)
            text += f", padding_mode={self.padding_mode}"
        return text

    def forward(self, x):
        check_tensor("Conv3d", x)
        if x.ndim not in (4, 5) or x.shape[-4] != self.in_channels:
            raise ValueError(f"Conv3d({self.in_channels}, {self.out_channels}): expected input "
                             f"(N, {self.in_channels}, D, H, W) or unbatched, got {x.shape}")
        unbatched = x.ndim == 4
        if unbatched:
            x = x.reshape((1,) + x.shape)
        weight, bias = self.weight, self.bias
        if autocasting.state.on:  # F.conv3d's casts
            x, weight, bias = autocasting.cast_args("conv3d", x, weight, bias)
        x, sides = pad_input(x, self._sides, self.padding_mode)
        out = ops.conv3d_sides(x, weight, self.stride, sides, self.dilation, self.groups)
        out = conv.with_bias("Conv3d", out, bias, self.out_channels, 3)
        return out.reshape(out.shape[1:]) if unbatched else out
