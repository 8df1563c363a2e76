"""Normalization layers over the last axis: RMSDiv, RMSNorm, LayerNorm.

RMSDiv and RMSNorm reverse through the tape (Module.reverse; a hand-written
rule measured no faster, benchmarks/bench_reverse.py). LayerNorm keeps its own
(0.75x the tape's time), g = dL/dy, means over the last axis:

- LayerNorm: xhat = (x - mean(x)) * rstd, rstd = 1 / sqrt(var(x) + eps), y = xhat * w + b;
  with h = g * w: dL/dx = rstd * (h - mean(h) - xhat * mean(h * xhat)),
  dL/dw = sum(g * xhat), dL/db = sum(g).
"""

from __future__ import annotations

from fastnn.api.args import flag, integer, nonnegative
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.linear import check_features, sum_leading
from fastnn.nn.module import Module, check_grad, check_tensor, const_init
from fastnn.ops import nnops


class RMSDiv(Module):
    """y = x / sqrt(mean(x^2 over the last axis) + eps); no parameters."""

    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = nonnegative(type(self).__name__, "eps", eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}"

    def forward(self, x):
        return nnops.rms_div(check_tensor("RMSDiv", x), self.eps)



class RMSNorm(Module):
    """RMSDiv then a per-feature scale ``weight`` (features,), class connective, initially 1."""

    def __init__(self, features: int, eps: float = 1e-6, dtype=None, device=None):
        super().__init__()
        self.features = integer(type(self).__name__, "features", features)
        self.eps = nonnegative(type(self).__name__, "eps", eps)
        self.weight = const_init((self.features,), 1.0, "connective", dtype, device)

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}"

    def forward(self, x):
        check_features(f"RMSNorm({self.features})", x, self.features, "features")
        return nnops.rms_div(x, self.eps) * self.weight



class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis, as PyTorch's.

    weight (connective) starts at 1 and bias (bias) at 0; ``elementwise_affine=False``
    drops both. The variance is the biased one (divides by F).
    """

    def __init__(self, features: int, eps: float = 1e-5, elementwise_affine: bool = True,
                 dtype=None, device=None):
        super().__init__()
        self.features = integer(type(self).__name__, "features", features)
        self.eps = nonnegative(type(self).__name__, "eps", eps)
        self.affine = flag("LayerNorm", "elementwise_affine", elementwise_affine)
        if self.affine:
            self.weight = const_init((self.features,), 1.0, "connective", dtype, device)
            self.bias = const_init((self.features,), 0.0, "bias", dtype, device)

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}"

    def _normalize(self, x):
        centered = x - x.mean(axis=-1, keepdims=True)
        rstd = ((centered * centered).mean(axis=-1, keepdims=True) + self.eps) ** -0.5
        return centered * rstd, rstd

    def forward(self, x):
        check_features(f"LayerNorm({self.features})", x, self.features, "features")
        xhat, _ = self._normalize(x)
        return xhat * self.weight + self.bias if self.affine else xhat

    def reverse(self, x, grad_out):
        check_features(f"LayerNorm({self.features})", x, self.features, "features")
        check_grad(f"LayerNorm({self.features})", x, grad_out)
        with no_grad():
            xhat, rstd = self._normalize(x)
            h = grad_out * self.weight if self.affine else grad_out
            mean_h = h.mean(axis=-1, keepdims=True)
            mean_hx = (h * xhat).mean(axis=-1, keepdims=True)
            grad_x = rstd * (h - mean_h - xhat * mean_hx)
            grads = {}
            if self.affine:
                grads = {"weight": sum_leading(grad_out * xhat), "bias": sum_leading(grad_out)}
        return grad_x, grads
