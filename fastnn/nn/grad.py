"""PyTorch's ``torch.nn.grad``: the gradients of conv1d, conv2d and conv3d with respect to
their input (``convNd_input``, given the input's size) and their weight (``convNd_weight``,
given the weight's size), for custom autograd Functions that call them.

Each is the tape's own gradient of the convolution, taken at zeros: the convolution is
linear in the operand asked for, so its gradient does not depend on that operand's
values, only on its size. The result has a history (is differentiable) where the other
operand or ``grad_output`` requires grad, as PyTorch's.
"""

from __future__ import annotations

from fastnn.api.errors import ShapeError
from fastnn.autograd.functional import grad as _grad
from fastnn.autograd.grad_mode import enable_grad, is_grad_enabled
from fastnn.ops.conv import conv2d
from fastnn.ops.conv3d import conv3d
from fastnn.ops.creation import zeros_like
from fastnn.ops.nnops import conv1d
from fastnn.ops.tensor import Tensor, zeros

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(name, conv, input_size, weight, grad_output, args):
    _check(name, weight=weight, grad_output=grad_output)
    x = zeros(*input_size, dtype=weight.dtype, device=weight.device, requires_grad=True)
    with enable_grad():
        out = conv(x, weight, None, *args)
    _check_shape(name, out, grad_output)
    create = is_grad_enabled() and (weight.requires_grad or grad_output.requires_grad)
    return _grad(out, x, grad_output, create_graph=create)[0]


def _weight_grad(name, conv, input, weight_size, grad_output, args):
    _check(name, input=input, grad_output=grad_output)
    w = zeros(*weight_size, dtype=input.dtype, device=input.device, requires_grad=True)
    with enable_grad():
        out = conv(input, w, None, *args)
    _check_shape(name, out, grad_output)
    create = is_grad_enabled() and (input.requires_grad or grad_output.requires_grad)
    found = _grad(out, w, grad_output, create_graph=create, allow_unused=True)[0]
    return zeros_like(w, requires_grad=False) if found is None else found


def _check(name, **tensors) -> None:
    for arg, value in tensors.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}: {arg} must be a Tensor, got {type(value).__name__}")


def _check_shape(name, out, grad_output) -> None:
    if tuple(out.shape) != tuple(grad_output.shape):
        raise ShapeError(f"{name}: grad_output has shape {tuple(grad_output.shape)}, but the "
                         f"convolution of these sizes gives {tuple(out.shape)}; check "
                         f"the sizes, stride, padding and dilation")


def _input_function(name, conv):
    def function(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _input_grad(name, conv, input_size, weight, grad_output,
                           (stride, padding, dilation, groups))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"The gradient of ``{conv.__name__}(input, weight, ...)`` with "
                        f"respect to an input of ``input_size``.")
    return function


def _weight_function(name, conv):
    def function(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        return _weight_grad(name, conv, input, weight_size, grad_output,
                            (stride, padding, dilation, groups))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"The gradient of ``{conv.__name__}(input, weight, ...)`` with "
                        f"respect to a weight of ``weight_size``.")
    return function


conv1d_input = _input_function("conv1d_input", conv1d)
conv1d_weight = _weight_function("conv1d_weight", conv1d)
conv2d_input = _input_function("conv2d_input", conv2d)
conv2d_weight = _weight_function("conv2d_weight", conv2d)
conv3d_input = _input_function("conv3d_input", conv3d)
conv3d_weight = _weight_function("conv3d_weight", conv3d)
