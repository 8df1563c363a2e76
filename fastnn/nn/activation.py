"""Elementwise and softmax layers: Activation, Softmax, Swish, Dropout.

Activation, Softmax and Swish reverse through the tape (Module.reverse): a
hand-written rule measured no faster (benchmarks/bench_reverse.py). Dropout
keeps its own, since its mask must be the forward's:

- Dropout(p): y = x * m / (1 - p) with a random keep-mask m; dL/dx = g * m / (1 - p).
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.api.args import flag, integer, nonnegative, real
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.bases import _DropoutNd
from fastnn.nn.linear import check_features
from fastnn.nn.module import Module, check_grad, check_tensor, const_init
from fastnn.ops import activations, nnops
from fastnn.ops.nnops import implicit_dim, last_axis
from fastnn.ops.spelling import UNSET, dim_of
from fastnn.ops.tensor import Tensor, host_rng, rand, zeros


class Activation(Module):
    """y = kind(x) for kind in relu, leaky_relu, sigmoid, tanh, silu, gelu, softplus, identity."""

    def __init__(self, kind: str = "relu", slope: float = 0.01):
        super().__init__()
        if not isinstance(kind, str):
            raise TypeError(f"Activation: kind must be the name of an activation, one of "
                            f"{', '.join(activations.ACTIVATIONS)}; got {type(kind).__name__} "
                            f"{kind!r}")
        if kind not in activations.ACTIVATIONS:
            raise ValueError(
                f"Activation: unknown kind {kind!r}; choose one of "
                f"{', '.join(sorted(activations.ACTIVATIONS))}"
            )
        self.kind, self.slope = kind, real("Activation", "slope", slope)

    def extra_repr(self) -> str:
        return repr(self.kind) + (f", slope={self.slope}" if self.kind == "leaky_relu" else "")

    # a class whose forward is exactly activation(kind, x, slope) says so here, in its own
    # body: a subclass with a forward of its own does not inherit it (see fused_kind)
    FORWARD_IS_KIND = True

    def forward(self, x):
        return activations.activation(self.kind, check_tensor("Activation", x), self.slope)

    def fused_kind(self):
        """(kind, slope) that a Linear just before this layer may apply in its fused
        ``bias_act`` hook (Sequential does), when calling this layer computes exactly
        ``activation(kind, x, slope)``; None otherwise (a subclass with a forward or a
        ``__call__`` of its own, or arguments the kind does not cover): it is called as
        itself."""
        plain = _PLAIN.get(type(self))
        if plain is None:
            plain = _PLAIN[type(self)] = _forward_is_kind(type(self))
        return (self.kind, self.slope) if plain and self._kind_covers() else None

    def _kind_covers(self) -> bool:
        """Whether this layer's arguments are those of its kind (a subclass with more of
        them, GELU's approximate, says when they are)."""
        return True


_PLAIN: dict = {}  # Activation subclass -> whether its forward is its kind's (fused_kind)


def _forward_is_kind(cls) -> bool:
    owner = next(c for c in cls.__mro__ if "forward" in vars(c))
    return bool(vars(owner).get("FORWARD_IS_KIND")) and cls.__call__ is Module.__call__



class Softmax(Module):
    """y = softmax(x / temperature) along ``dim`` (PyTorch's Softmax; ``axis=`` is the same).

    The default is the last axis (fastnn's API contract), with a warning on 3-D and larger
    input, where PyTorch's implicit dim differs (:func:`~fastnn.ops.nnops.last_axis`); an
    explicit ``dim=None`` picks PyTorch's implicit dim, 0 for 0-, 1- and 3-D input, else 1,
    with PyTorch's deprecation warning (:func:`implicit_dim`).
    """

    def __init__(self, dim=UNSET, temperature: float = 1.0, *, axis=UNSET):
        super().__init__()
        temperature = nonnegative("Softmax", "temperature", temperature, zero=False)
        self._last_axis = dim is UNSET and axis is UNSET  # the default: warn as last_axis
        dim = dim_of("Softmax", dim, axis, -1)
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"Softmax: dim must be an int or None, got {dim!r}")
        self.dim = None if dim is None else int(dim)
        self.temperature = float(temperature)

    @property
    def axis(self):
        """The same as ``dim`` (fastnn's earlier spelling)."""
        return self.dim

    def extra_repr(self) -> str:
        text = f"dim={self.dim}"
        return text if self.temperature == 1.0 else text + f", temperature={self.temperature}"

    def _scaled(self, x):
        return x if self.temperature == 1.0 else x * (1.0 / self.temperature)

    def forward(self, x):
        check_tensor("Softmax", x)
        dim = implicit_dim("softmax", x.ndim) if self.dim is None else self.dim
        if x.ndim >= 3 and self.dim == -1 and getattr(self, "_last_axis", False):
            last_axis("Softmax", x.ndim)
        return nnops.softmax(self._scaled(x), dim)


class Swish(Module):
    """y = x * sigmoid(beta * x) with a learnable per-feature beta (features,), class activation.

    beta starts at 1 (so Swish starts as SiLU).
    """

    def __init__(self, features: int, init: float = 1.0, dtype=None, device=None):
        super().__init__()
        self.features = integer("Swish", "features", features)
        self.beta = const_init((self.features,), real("Swish", "init", init), "activation",
                               dtype, device)

    def extra_repr(self) -> str:
        return str(self.features)

    def forward(self, x):
        check_features(f"Swish({self.features})", x, self.features, "features")
        return x * activations.sigmoid(x * self.beta)



class Dropout(_DropoutNd):
    """y = x * m / (1 - p) in training mode, with m ~ Bernoulli(1 - p) drawn on the device.

    Identity in eval mode (``model.eval()``) and when p == 0; zeros when p == 1.

    The mask is a pure function of a seed: ``forward`` draws the seed from
    fastnn's host generator (``fnn.manual_seed`` reproduces it) and remembers
    it in ``self.seed``, the one thing Dropout keeps, because it is a random
    draw and cannot be recovered from ``x``. ``reverse`` uses that seed (or
    ``seed=``); on a fresh instance it draws one, so the gradient is that of a
    forward pass with the mask of ``self.seed``.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a number in [0, 1], got {p!r}")
        self.p = float(p)
        self.inplace = flag("Dropout", "inplace", inplace)  # writes the result into x
        self.seed = None

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"

    def _active(self) -> bool:
        return self.training and self.p > 0.0

    def _scaled_mask(self, x: Tensor, seed: int) -> Tensor:
        dtype = x.dtype if x.dtype.is_floating else dtypes.float32
        if self.p == 1.0:  # every element dropped, as PyTorch (no 1 / (1 - p) to take)
            return zeros(x.shape, dtype=dtype, device=x.device)
        with no_grad():
            keep = rand(x.shape, dtype=dtype, device=x.device, seed=seed) >= self.p
            return keep.astype(dtype) * (1.0 / (1.0 - self.p))

    def forward(self, x, seed=None):
        check_tensor("Dropout", x)
        if not self._active():
            return x
        self.seed = (int(host_rng().integers(2**31)) if seed is None
                     else integer("Dropout", "seed", seed, 0))
        out = x * self._scaled_mask(x, self.seed)
        return x.copy_(out) if self.inplace else out

    def reverse(self, x, grad_out, seed=None):
        check_grad("Dropout", x, grad_out)
        if not self._active():
            return grad_out, {}
        if seed is not None:
            self.seed = integer("Dropout.reverse", "seed", seed, 0)
        elif self.seed is None:
            self.seed = int(host_rng().integers(2**31))
        with no_grad():
            return grad_out * self._scaled_mask(x, self.seed), {}
