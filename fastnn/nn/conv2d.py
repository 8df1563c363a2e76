"""Conv2d: a 2-D convolution layer over (batch, channels, height, width) inputs.

Its ``reverse`` is the base class's: one forward and backward on a private tape,
whose conv2d rule calls the backend's ``conv2d_grad_input`` and
``conv2d_grad_weight`` primitives (what a hand-written reverse would call too).
"""

from __future__ import annotations

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.nn.bases import _ConvNd
from fastnn.nn.conv_padding import check_mode, pad_input
from fastnn.nn.module import check_tensor
from fastnn.ops import autocasting, conv


class Conv2d(_ConvNd):
    """PyTorch's Conv2d: weight (out, in // groups, kh, kw) connective, bias (out,) bias.

    ``kernel_size``, ``stride``, ``dilation``: an int or a pair; ``padding``: an int, a
    pair, "same" (stride 1) or "valid". Both parameters start as
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in // groups * kh * kw.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__()
        self.padding_mode = check_mode("Conv2d", padding_mode)
        self.in_channels = integer("Conv2d", "in_channels", in_channels)
        self.out_channels = integer("Conv2d", "out_channels", out_channels)
        self.kernel_size = conv.pair("Conv2d", "kernel_size", kernel_size, 1)
        self.stride = conv.pair("Conv2d", "stride", stride, 1)
        self.dilation = conv.pair("Conv2d", "dilation", dilation, 1)
        self.groups = integer("Conv2d", "groups", groups)
        spans = tuple(d * (k - 1) + 1 for d, k in zip(self.dilation, self.kernel_size))
        self._sides = conv.side_padding("Conv2d", padding, spans, self.stride)
        self.padding = padding if isinstance(padding, str) else tuple(lo for lo, _ in
                                                                      self._sides)
        self._init_parameters((self.out_channels, self.in_channels // self.groups)
                              + self.kernel_size, bias, dtype, device)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):  # ("valid" printed, as PyTorch's)
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":  # (last, as PyTorch prints it)
            text += f", padding_mode={self.padding_mode}"
        return text

    def forward(self, x):
        check_tensor("Conv2d", x)
        if x.ndim == 3:  # one sample (C, H, W), as PyTorch's: a batch of one
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ShapeError(
                f"Conv2d({self.in_channels}, {self.out_channels}): expected input of shape "
                f"(batch, {self.in_channels}, height, width), got {x.shape}; check the channel "
                "count (channels come before height and width, as in PyTorch)"
            )
        weight, bias = self.weight, self.bias
        if autocasting.state.on:  # F.conv2d's casts
            x, weight, bias = autocasting.cast_args("conv2d", x, weight, bias)
        x, sides = pad_input(x, self._sides, self.padding_mode)
        out = conv.conv2d_raw(x, weight, self.stride, sides, self.dilation, self.groups)
        if bias is None:
            return out
        return out + bias.reshape(self.out_channels, 1, 1)
