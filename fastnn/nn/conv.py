"""Conv1d: a 1-D convolution layer over (batch, channels, length) inputs.

Reverse rule (g = dL/dy of shape (N, C_out, L_out)): dL/dx and dL/dW come from
the backend's ``conv1d_grad_input`` and ``conv1d_grad_weight`` primitives (the
same ones the tape uses), dL/db = sum of g over the batch and length axes.
"""

from __future__ import annotations

from fastnn.api.args import flag, integer
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.module import (
    Module,
    check_grad,
    check_tensor,
    fan_in_bound,
    uniform_init,
    wrap,
)
from fastnn.ops import nnops


class Conv1d(Module):
    """PyTorch's Conv1d: weight (out, in // groups, k) connective, bias (out,) bias.

    Both start as U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in // groups * k.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, bias: bool = True, groups: int = 1,
                 dtype=None, device=None):
        super().__init__()
        self.in_channels = integer("Conv1d", "in_channels", in_channels)
        self.out_channels = integer("Conv1d", "out_channels", out_channels)
        self.kernel_size = integer("Conv1d", "kernel_size", kernel_size)
        self.stride = integer("Conv1d", "stride", stride)
        self.padding = integer("Conv1d", "padding", padding, 0)
        self.dilation = integer("Conv1d", "dilation", dilation)
        self.groups = integer("Conv1d", "groups", groups)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                f"Conv1d: in_channels={in_channels} and out_channels={out_channels} must both be "
                f"divisible by groups={groups}"
            )
        fan_in = self.in_channels // self.groups * self.kernel_size
        bound = fan_in_bound(fan_in)
        shape = (self.out_channels, self.in_channels // self.groups, self.kernel_size)
        self.weight = uniform_init(shape, bound, "connective", dtype, device)
        self.bias = None
        if flag("Conv1d", "bias", bias):
            self.bias = uniform_init((self.out_channels,), bound, "bias", dtype, device)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}")

    def _check(self, x):
        check_tensor("Conv1d", x)
        if x.ndim != 3 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"Conv1d({self.in_channels}, {self.out_channels}): expected input of shape "
                f"(batch, {self.in_channels}, length), got {x.shape}; check the channel count "
                "(channels come before length, as in PyTorch)"
            )

    def forward(self, x):
        self._check(x)
        return nnops.conv1d(x, self.weight, self.bias, self.stride, self.padding,
                            self.dilation, self.groups)

    def reverse(self, x, grad_out):
        self._check(x)
        span = self.dilation * (self.kernel_size - 1) + 1
        length = (x.shape[2] + 2 * self.padding - span) // self.stride + 1
        check_grad(f"Conv1d({self.in_channels}, {self.out_channels})", x, grad_out,
                   (x.shape[0], self.out_channels, length))
        ops = x._device.ops
        attrs = (self.stride, self.padding, self.dilation, self.groups)
        with no_grad():
            w = self.weight.to(x.dtype)
            grad_x = ops.conv1d_grad_input(grad_out._data, w._data, x.shape[2], *attrs)
            grad_w = ops.conv1d_grad_weight(x._data, grad_out._data, self.kernel_size, *attrs)
            grads = {"weight": wrap(grad_w, grad_out)}
            if self.bias is not None:
                grads["bias"] = grad_out.sum(axis=(0, 2))
        return wrap(grad_x, grad_out), grads
