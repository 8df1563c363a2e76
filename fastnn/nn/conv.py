"""Conv1d: a 1-D convolution layer over (batch, channels, length) inputs.

``padding`` is an int, "same" or "valid" (as PyTorch's); ``causal=True`` pads
dilation * (kernel_size - 1) zeros before each signal and none after, so that
output t sees inputs up to t only. Padding that is not one number on both ends
takes the tape's gradients (F.conv1d runs it as conv2d over a height of 1).

Reverse rule (g = dL/dy of shape (N, C_out, L_out)): dL/dx and dL/dW come from
the backend's ``conv1d_grad_input`` and ``conv1d_grad_weight`` primitives (the
same ones the tape uses), dL/db = sum of g over the batch and length axes.
"""

from __future__ import annotations

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.bases import _ConvNd
from fastnn.nn.conv_padding import check_mode, pad_input
from fastnn.nn.module import (
    check_grad,
    check_tensor,
    wrap,
)
from fastnn.ops import nnops
from fastnn.ops.conv import side_padding


class Conv1d(_ConvNd):
    """PyTorch's Conv1d: weight (out, in // groups, k) connective, bias (out,) bias.

    Both start as U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in // groups * k.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding=0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device=None, dtype=None, *, causal: bool = False):
        super().__init__()
        self.padding_mode = check_mode("Conv1d", padding_mode)
        self.in_channels = integer("Conv1d", "in_channels", in_channels)
        self.out_channels = integer("Conv1d", "out_channels", out_channels)
        self.kernel_size = integer("Conv1d", "kernel_size", _one(kernel_size))
        self.stride = integer("Conv1d", "stride", _one(stride))
        self.dilation = integer("Conv1d", "dilation", _one(dilation))
        self.groups = integer("Conv1d", "groups", groups)
        self.causal = bool(causal)
        span = self.dilation * (self.kernel_size - 1) + 1
        if self.causal:
            if padding not in (0, "valid"):
                raise ValueError(f"Conv1d: causal=True sets the padding itself; got padding="
                                 f"{padding!r} too (leave it 0)")
            self._sides = (span - 1, 0)
            self.padding = 0
        else:
            padding = _one(padding) if not isinstance(padding, str) else padding
            (self._sides,) = side_padding("Conv1d", padding, (span,), (self.stride,))
            self.padding = padding if isinstance(padding, str) else self._sides[0]
        self._init_parameters((self.out_channels, self.in_channels // self.groups,
                               self.kernel_size), bias, dtype, device)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size=({self.kernel_size},), "
                f"stride=({self.stride},)")
        if self.causal:
            text += ", causal=True"
        elif self.padding != 0:
            text += (f", padding={self.padding}" if isinstance(self.padding, str)
                     else f", padding=({self.padding},)")
        if self.dilation != 1:
            text += f", dilation=({self.dilation},)"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":  # (last, as PyTorch prints it)
            text += f", padding_mode={self.padding_mode}"
        return text

    def _check(self, x):
        check_tensor("Conv1d", x)
        if x.ndim != 3 or x.shape[1] != self.in_channels:
            raise ShapeError(
                f"Conv1d({self.in_channels}, {self.out_channels}): expected input of shape "
                f"(batch, {self.in_channels}, length), got {x.shape}; check the channel count "
                "(channels come before length, as in PyTorch)"
            )

    def forward(self, x):
        if getattr(x, "ndim", None) == 2:  # one sample (C, L), as PyTorch's: a batch of one
            return self.forward(x.unsqueeze(0)).squeeze(0)
        self._check(x)
        x, (sides,) = pad_input(x, (self._sides,), self.padding_mode)
        padding = sides[0] if sides[0] == sides[1] else sides
        return nnops.conv1d(x, self.weight, self.bias, self.stride, padding,
                            self.dilation, self.groups)

    def reverse(self, x, grad_out):
        self._check(x)
        if self._sides[0] != self._sides[1] or self.padding_mode != "zeros":
            return super().reverse(x, grad_out)
        span = self.dilation * (self.kernel_size - 1) + 1
        length = (x.shape[2] + 2 * self._sides[0] - span) // self.stride + 1
        check_grad(f"Conv1d({self.in_channels}, {self.out_channels})", x, grad_out,
                   (x.shape[0], self.out_channels, length))
        ops = x._device.ops
        attrs = (self.stride, self._sides[0], self.dilation, self.groups)
        with no_grad():
            w = self.weight.to(x.dtype)
            grad_x = ops.conv1d_grad_input(grad_out._data, w._data, x.shape[2], *attrs)
            grad_w = ops.conv1d_grad_weight(x._data, grad_out._data, self.kernel_size, *attrs)
            grads = {"weight": wrap(grad_w, grad_out)}
            if self.bias is not None:
                grads["bias"] = grad_out.sum(axis=(0, 2))
        return wrap(grad_x, grad_out), grads


def _one(value):
    """PyTorch's 1-tuples (kernel_size=(5,)) as the int they hold."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        return value[0]
    return value
