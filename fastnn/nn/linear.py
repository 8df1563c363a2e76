"""Affine layers along the last axis: Dense, Linear, Bias1d, Diag, ScalarScale.

All of them act on ``(..., features)`` inputs. Reverse rules (g = dL/dy):

=============  ====================  ==========================  ======================
layer          y                     dL/dx                       dL/dparam
=============  ====================  ==========================  ======================
Dense          x W^T                 g W                         g^T x (leading dims flat)
Bias1d         x + b                 g                           sum of g over leading dims
Linear         x W^T + b             g W                         g^T x, sum g
Diag           x * d                 g * d                       sum of g * x
ScalarScale    x * s                 g * s                       sum of g * x (all axes)
=============  ====================  ==========================  ======================
"""

from __future__ import annotations

from fastnn.api.args import flag, integer, real
from fastnn.api.errors import ShapeError
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.module import (
    Module,
    check_grad,
    check_tensor,
    const_init,
    fan_in_bound,
    uniform_init,
)
from fastnn.nn.parameter import reset_fan_in_uniform
from fastnn.ops import activations, autocasting, nnops
from fastnn.ops.tensor import Tensor


def check_features(layer: str, x: Tensor, features: int, what: str = "in_features") -> None:
    check_tensor(layer, x)
    if x.ndim == 0 or x.shape[-1] != features:
        raise ShapeError(
            f"{layer}: expected input of shape (..., {features}) ({what}={features}), got "
            f"{x.shape}; the last axis must be the feature axis"
        )


def sum_leading(g: Tensor) -> Tensor:
    """Sum over every axis but the last (the per-feature gradient of a broadcast parameter)."""
    return g.sum(axis=tuple(range(g.ndim - 1))) if g.ndim > 1 else g


def _flat(t: Tensor) -> Tensor:
    return t.reshape(-1, t.shape[-1]) if t.ndim != 2 else t


def _dense_grads(x: Tensor, grad_out: Tensor, weight: Tensor):
    grad_x = grad_out @ weight
    dtype, device = weight._dtype, weight._device
    if (x._dtype is dtype and grad_out._dtype is dtype and x._device is device
            and grad_out._device is device and dtype.is_floating):  # the tape's one hook
        return grad_x, Tensor._make(device.ops.linear_grad_weight(x._data, grad_out._data),
                                    dtype, device)
    return grad_x, _flat(grad_out).T @ _flat(x)  # (promoted, or the mismatch named)


class Dense(Module):
    """y = x W^T with weight (out_features, in_features), class connective; no bias."""

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        self.in_features = integer(name, "in_features", in_features)
        self.out_features = integer(name, "out_features", out_features)
        self.weight = uniform_init((self.out_features, self.in_features),
                                   fan_in_bound(self.in_features), "connective", dtype, device)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"

    def reset_parameters(self) -> None:
        """Draw the parameters again, in place, as at construction (PyTorch's init)."""
        reset_fan_in_uniform(self, self.in_features)

    def forward(self, x):
        check_features(self._name(), x, self.in_features)
        # F.linear, not x @ W.T: its weight gradient comes out contiguous (out, in)
        return nnops.linear(x, self.weight)

    def _name(self) -> str:
        return f"{type(self).__name__}({self.in_features}, {self.out_features})"

    def reverse(self, x, grad_out):
        check_features(self._name(), x, self.in_features)
        check_grad(self._name(), x, grad_out, x.shape[:-1] + (self.out_features,))
        with no_grad():
            grad_x, grad_w = _dense_grads(x, grad_out, self.weight)
        return grad_x, {"weight": grad_w}


class Linear(Dense):
    """y = x W^T + b: Dense followed by Bias1d, with PyTorch's names and init.

    weight (out, in) is connective, bias (out,) is bias; both start as
    U(-1/sqrt(in), 1/sqrt(in)). ``forward_act`` adds the bias and an
    activation in one fused ``bias_act`` hook (Sequential uses it for a
    Linear followed by an Activation).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(in_features, out_features, dtype=dtype, device=device)
        if flag(type(self).__name__, "bias", bias):
            self.bias = uniform_init((self.out_features,), fan_in_bound(self.in_features),
                                     "bias", dtype, device)
        else:
            self.bias = None

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"

    def forward(self, x):
        return self.forward_act(x, "identity")

    def forward_act(self, x, kind: str, slope: float = 0.01):
        check_features(self._name(), x, self.in_features)  # the one check of x's shape
        weight, bias = self.weight, self.bias
        if autocasting.state.on:  # F.linear's casts (the bias too)
            x, weight, bias = autocasting.cast_args("linear", x, weight, bias)
        dtype, device = weight._dtype, weight._device
        # checked here, nothing is checked twice below; else the checked ops name the mismatch
        trusted = x._dtype is dtype and x._device is device and dtype.is_floating and (
            bias is None or (bias._dtype is dtype and bias._device is device))
        z = nnops.linear_raw(x, weight) if trusted else nnops.linear(x, weight)
        if bias is None:
            return activations.activation(kind, z, slope)
        if trusted and kind in activations.FUSED_KINDS:  # (kinds and slopes layers validated)
            return activations.bias_act_raw(z, bias, kind, float(slope))
        return activations.bias_act(z, bias, kind, slope)

    def reverse(self, x, grad_out):
        check_features(self._name(), x, self.in_features)
        check_grad(self._name(), x, grad_out, x.shape[:-1] + (self.out_features,))
        with no_grad():
            grad_x, grad_w = _dense_grads(x, grad_out, self.weight)
            grads = {"weight": grad_w}
            if self.bias is not None:
                grads["bias"] = sum_leading(grad_out)
        return grad_x, grads


class Bias1d(Module):
    """y = x + b along the last axis; b (features,) of class bias, initially 0."""

    def __init__(self, features: int, device=None, dtype=None):
        super().__init__()
        self.features = integer(type(self).__name__, "features", features)
        self.bias = const_init((self.features,), 0.0, "bias", dtype, device)

    def extra_repr(self) -> str:
        return str(self.features)

    def forward(self, x):
        check_features(f"Bias1d({self.features})", x, self.features, "features")
        return activations.bias_act(x, self.bias, "identity")

    def reverse(self, x, grad_out):
        check_features(f"Bias1d({self.features})", x, self.features, "features")
        check_grad(f"Bias1d({self.features})", x, grad_out)
        with no_grad():
            return grad_out, {"bias": sum_leading(grad_out)}


class Diag(Module):
    """y = x * d, a learnable per-feature scale d (features,) of class connective, initially 1."""

    def __init__(self, features: int, device=None, dtype=None):
        super().__init__()
        self.features = integer(type(self).__name__, "features", features)
        self.weight = const_init((self.features,), 1.0, "connective", dtype, device)

    def extra_repr(self) -> str:
        return str(self.features)

    def forward(self, x):
        check_features(f"Diag({self.features})", x, self.features, "features")
        return x * self.weight

    def reverse(self, x, grad_out):
        check_features(f"Diag({self.features})", x, self.features, "features")
        check_grad(f"Diag({self.features})", x, grad_out)
        with no_grad():
            return grad_out * self.weight, {"weight": sum_leading(grad_out * x)}


class ScalarScale(Module):
    """y = s * x with one learnable scalar s (shape ()), class connective."""

    def __init__(self, init: float = 1.0, device=None, dtype=None):
        super().__init__()
        self.weight = const_init((), real("ScalarScale", "init", init), "connective", dtype,
                                 device)

    def extra_repr(self) -> str:
        return f"init={self.weight.item():g}"

    def forward(self, x):
        check_tensor("ScalarScale", x)
        return x * self.weight
