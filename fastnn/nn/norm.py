"""Normalization layers over the trailing axes: RMSDiv, RMSNorm, LayerNorm.

RMSDiv and RMSNorm reverse through the tape (Module.reverse; a hand-written
rule measured no faster, benchmarks/bench_reverse.py). LayerNorm over one axis keeps
its own (0.75x the tape's time; over several axes it takes the tape's), g = dL/dy,
means over the last axis:

- LayerNorm: xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), y = xhat * w + b;
  with h = g * w: dL/dx = rstd * (h - mean(h) - xhat * mean(h * xhat)),
  dL/dw = sum(g * xhat), dL/db = sum(g).
"""

from __future__ import annotations

import math

from fastnn.api.args import as_given, flag, nonnegative
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn import init
from fastnn.nn.linear import check_features, sum_leading
from fastnn.nn.module import Module, check_grad, check_tensor, const_init
from fastnn.ops import autocasting, nnops, norms


def reset_affine(norm) -> None:
    """A norm's ``weight`` back to 1 and ``bias`` to 0 (those it has), in place."""
    if getattr(norm, "weight", None) is not None:
        init.ones_(norm.weight)
    if getattr(norm, "bias", None) is not None:
        init.zeros_(norm.bias)


class RMSDiv(Module):
    """y = x / sqrt(mean(x^2 over the last axis) + eps); no parameters."""

    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = as_given(nonnegative(type(self).__name__, "eps", eps), eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}"

    def forward(self, x):
        return nnops.rms_div(check_tensor("RMSDiv", x), self.eps)



class RMSNorm(Module):
    """PyTorch's RMSNorm: x / sqrt(mean(x^2 over normalized_shape) + eps) * weight.

    ``normalized_shape``: an int or a list (the trailing axes normalised); ``eps=None`` is
    the machine epsilon of the input's dtype, as PyTorch; weight (normalized_shape),
    class connective, starts at 1 (``elementwise_affine=False``: none).
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        self.normalized_shape = norms.normalized_shape_of(name, normalized_shape)
        self.features = math.prod(self.normalized_shape)
        self.eps = None if eps is None else nonnegative(name, "eps", eps)
        self.elementwise_affine = flag(name, "elementwise_affine", elementwise_affine)
        self.weight = None
        if self.elementwise_affine:
            self.weight = const_init(self.normalized_shape, 1.0, "connective", dtype, device)

    def reset_parameters(self) -> None:
        """weight back to 1, in place (PyTorch's)."""
        reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")

    def forward(self, x):
        if len(self.normalized_shape) > 1:
            return norms.rms_norm(x, self.normalized_shape, self.weight, self.eps)
        check_features(f"RMSNorm({self.features})", x, self.features, "features")
        weight = self.weight
        if autocasting.state.on:  # F.rms_norm's casts
            x, weight = autocasting.cast_args("rms_norm", x, weight)
        eps = norms.machine_eps(x) if self.eps is None else self.eps
        out = nnops.rms_div(x, eps)  # one fused primitive for the common case
        return out if weight is None else out * weight



class LayerNorm(Module):
    """PyTorch's LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias over the trailing
    axes ``normalized_shape`` (an int or a list).

    weight (connective) starts at 1 and bias (bias) at 0; ``elementwise_affine=False``
    drops both, ``bias=False`` the bias. The variance is the biased one.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        self.normalized_shape = norms.normalized_shape_of(name, normalized_shape)
        self.features = math.prod(self.normalized_shape)
        self.eps = as_given(nonnegative(name, "eps", eps), eps)
        self.elementwise_affine = self.affine = flag(name, "elementwise_affine",
                                                     elementwise_affine)
        with_bias = flag(name, "bias", bias)
        self.weight = self.bias = None
        if self.affine:
            self.weight = const_init(self.normalized_shape, 1.0, "connective", dtype, device)
            if with_bias:
                self.bias = const_init(self.normalized_shape, 0.0, "bias", dtype, device)

    def reset_parameters(self) -> None:
        """weight back to 1 and bias to 0, in place (PyTorch's)."""
        reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.affine}, "
                f"bias={self.bias is not None}")

    def _normalize(self, x):
        centered = x - x.mean(axis=-1, keepdims=True)
        rstd = ((centered * centered).mean(axis=-1, keepdims=True) + self.eps) ** -0.5
        return centered * rstd, rstd

    def forward(self, x):
        if len(self.normalized_shape) > 1:
            return norms.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        check_features(f"LayerNorm({self.features})", x, self.features, "features")
        if self.weight is not None and self.bias is not None:  # the layer_norm_train hook
            return norms.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        weight, bias = self.weight, self.bias
        if autocasting.state.on:  # F.layer_norm's casts
            x, weight, bias = autocasting.cast_args("layer_norm", x, weight, bias)
        xhat, _ = self._normalize(x)
        if weight is not None:
            xhat = xhat * weight
        return xhat if bias is None else xhat + bias

    def reverse(self, x, grad_out):
        if len(self.normalized_shape) > 1:
            return Module.reverse(self, x, grad_out)
        check_features(f"LayerNorm({self.features})", x, self.features, "features")
        check_grad(f"LayerNorm({self.features})", x, grad_out)
        with no_grad():
            xhat, rstd = self._normalize(x)
            h = grad_out * self.weight if self.weight is not None else grad_out
            mean_h = h.mean(axis=-1, keepdims=True)
            mean_hx = (h * xhat).mean(axis=-1, keepdims=True)
            grad_x = rstd * (h - mean_h - xhat * mean_hx)
            grads = {}
            if self.weight is not None and self.weight.requires_grad:
                grads["weight"] = sum_leading(grad_out * xhat)
            if self.bias is not None and self.bias.requires_grad:
                grads["bias"] = sum_leading(grad_out)
        return grad_x, grads
