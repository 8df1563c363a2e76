"""Elementwise and softmax layers: Activation, Softmax, Swish, Dropout.

Reverse rules (g = dL/dy):

- Activation(kind): dL/dx = g * kind'(x), the same derivative table the tape
  uses (:func:`fastnn.api.composite.activation_grad`).
- Softmax(axis, T): y = softmax(x / T); dL/dx = y * (g - sum(g * y, axis)) / T.
- Swish(features): y = x * s with s = sigmoid(beta * x);
  dL/dx = g * (s + beta * x * s * (1 - s)), dL/dbeta = sum(g * x^2 * s * (1 - s)).
- Dropout(p): y = x * m / (1 - p) with a random keep-mask m; dL/dx = g * m / (1 - p).
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes, hookspec
from fastnn.api.args import integer, real
from fastnn.api.composite import activation_grad
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.linear import check_features, sum_leading
from fastnn.nn.module import Module, check_grad, check_tensor, const_init, wrap
from fastnn.ops import activations, nnops
from fastnn.ops.tensor import Tensor, host_rng, rand


class Activation(Module):
    """y = kind(x) for kind in relu, leaky_relu, sigmoid, tanh, silu, gelu, softplus, identity."""

    def __init__(self, kind: str = "relu", slope: float = 0.01):
        super().__init__()
        if kind not in activations.ACTIVATIONS:
            raise ValueError(
                f"Activation: unknown kind {kind!r}; choose one of "
                f"{', '.join(sorted(activations.ACTIVATIONS))}"
            )
        self.kind, self.slope = kind, real("Activation", "slope", slope)

    def extra_repr(self) -> str:
        return repr(self.kind) + (f", slope={self.slope}" if self.kind == "leaky_relu" else "")

    def forward(self, x):
        return activations.activation(self.kind, check_tensor("Activation", x), self.slope)

    def reverse(self, x, grad_out):
        check_grad("Activation", x, grad_out)
        if self.kind == "identity":
            return grad_out, {}
        if self.kind not in hookspec.BIAS_ACT_KINDS:  # a kind with no hand-written gradient
            return super().reverse(x, grad_out)
        with no_grad():
            out = activations.activation(self.kind, x, self.slope)
            ops = x._device.ops
            grad = activation_grad(ops, self.kind, x._data, out._data, grad_out._data, self.slope)
        return wrap(grad, x), {}


class Softmax(Module):
    """y = softmax(x / temperature) along ``axis``."""

    def __init__(self, axis: int = -1, temperature: float = 1.0):
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"Softmax: temperature must be > 0, got {temperature}")
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            raise TypeError(f"Softmax: axis must be an int, got {axis!r}")
        self.axis, self.temperature = int(axis), float(temperature)

    def extra_repr(self) -> str:
        return f"axis={self.axis}, temperature={self.temperature}"

    def _scaled(self, x):
        return x if self.temperature == 1.0 else x * (1.0 / self.temperature)

    def forward(self, x):
        return nnops.softmax(self._scaled(check_tensor("Softmax", x)), self.axis)

    def reverse(self, x, grad_out):
        check_grad("Softmax", x, grad_out)
        with no_grad():
            y = nnops.softmax(self._scaled(x), self.axis)
            dot = (grad_out * y).sum(axis=self.axis, keepdims=True)
            return self._scaled(y * (grad_out - dot)), {}


class Swish(Module):
    """y = x * sigmoid(beta * x) with a learnable per-feature beta (features,), class activation.

    beta starts at 1 (so Swish starts as SiLU).
    """

    def __init__(self, features: int, init: float = 1.0, dtype=None, device=None):
        super().__init__()
        self.features = integer("Swish", "features", features)
        self.beta = const_init((self.features,), float(init), "activation", dtype, device)

    def extra_repr(self) -> str:
        return str(self.features)

    def forward(self, x):
        check_features(f"Swish({self.features})", x, self.features, "features")
        return x * activations.sigmoid(x * self.beta)

    def reverse(self, x, grad_out):
        check_features(f"Swish({self.features})", x, self.features, "features")
        check_grad(f"Swish({self.features})", x, grad_out)
        with no_grad():
            s = activations.sigmoid(x * self.beta)
            ds = s * (1.0 - s)  # sigmoid'(beta x)
            grad_x = grad_out * (s + x * self.beta * ds)
            grad_beta = sum_leading(grad_out * x * x * ds)
        return grad_x, {"beta": grad_beta}


class Dropout(Module):
    """y = x * m / (1 - p) in training mode, with m ~ Bernoulli(1 - p) drawn on the device.

    Identity in eval mode (``model.eval()``) and when p == 0.

    The mask is a pure function of a seed: ``forward`` draws the seed from
    fastnn's host generator (``fnn.manual_seed`` reproduces it) and remembers
    it in ``self.seed``, the one thing Dropout keeps, because it is a random
    draw and cannot be recovered from ``x``. ``reverse`` uses that seed (or
    ``seed=``); on a fresh instance it draws one, so the gradient is that of a
    forward pass with the mask of ``self.seed``.
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must be a number in [0, 1), got {p!r}")
        self.p = float(p)
        self.seed = None

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"

    def _active(self) -> bool:
        return self.training and self.p > 0.0

    def _scaled_mask(self, x: Tensor, seed: int) -> Tensor:
        dtype = x.dtype if x.dtype.is_floating else dtypes.float32
        with no_grad():
            keep = rand(x.shape, dtype=dtype, device=x.device, seed=seed) >= self.p
            return keep.astype(dtype) * (1.0 / (1.0 - self.p))

    def forward(self, x, seed=None):
        check_tensor("Dropout", x)
        if not self._active():
            return x
        self.seed = int(host_rng().integers(2**31)) if seed is None else int(seed)
        return x * self._scaled_mask(x, self.seed)

    def reverse(self, x, grad_out, seed=None):
        check_grad("Dropout", x, grad_out)
        if not self._active():
            return grad_out, {}
        if seed is not None:
            self.seed = int(seed)
        elif self.seed is None:
            self.seed = int(host_rng().integers(2**31))
        with no_grad():
            return grad_out * self._scaled_mask(x, self.seed), {}
