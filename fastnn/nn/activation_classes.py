"""PyTorch's activation classes: ReLU, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, Softplus, ELU,
SELU, Mish, Hardtanh, Identity, LogSoftmax, GLU.

The ones whose kind has a hand-written derivative (``hookspec.BIAS_ACT_KINDS``) are
:class:`~fastnn.nn.activation.Activation` under PyTorch's name and take its reverse; the
others are compositions of tensor ops, so their ``reverse`` comes from the tape
(:meth:`Module.reverse`). Each takes PyTorch's arguments; ``inplace=True`` writes the
result into the input, as PyTorch's (:func:`fastnn.ops.activations.written`: the tape
still differentiates it).
"""

from __future__ import annotations

import numbers

from fastnn.api.args import as_given, real
from fastnn.nn.activation import Activation, implicit_dim, last_axis
from fastnn.nn.module import Module, check_tensor
from fastnn.ops import activations, nnops
from fastnn.ops.spelling import UNSET, dim_of


def inplace_repr(inplace: bool, before: str = "") -> str:
    """PyTorch's extra_repr ending of an activation with ``inplace``."""
    if not inplace:
        return before
    return f"{before}, inplace=True" if before else "inplace=True"


class _Kind(Activation):
    """An Activation kind with PyTorch's class name; ``inplace`` where PyTorch has it."""

    KIND = "identity"
    INPLACE = False  # whether PyTorch's class takes inplace=
    FORWARD_IS_KIND = True  # (in place or not, the values are the kind's)

    def __init__(self, inplace: bool = False):
        super().__init__(self.KIND)
        self.inplace = bool(inplace) and self.INPLACE

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace)

    def forward(self, x):
        if self.inplace:
            return getattr(activations, self.KIND)(check_tensor(type(self).__name__, x),
                                                   inplace=True)
        return super().forward(x)


class ReLU(_Kind):
    """max(x, 0)."""

    KIND = "relu"
    INPLACE = True


class Sigmoid(_Kind):
    """1 / (1 + exp(-x))."""

    KIND = "sigmoid"


class Tanh(_Kind):
    """tanh(x)."""

    KIND = "tanh"


class SiLU(_Kind):
    """x * sigmoid(x)."""

    KIND = "silu"
    INPLACE = True


class Identity(_Kind):
    """y = x (PyTorch's Identity accepts and ignores any arguments)."""

    def __init__(self, *args, **kwargs):
        super().__init__()


class LeakyReLU(Activation):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__("leaky_relu", negative_slope)
        self.inplace = bool(inplace)
        self._given_slope = as_given(self.slope, negative_slope)

    @property
    def negative_slope(self):
        """PyTorch's attribute (``kaiming_normal_(w, a=m.negative_slope)`` reads it), as
        given; setting it changes the slope the layer applies."""
        return self._given_slope

    @negative_slope.setter
    def negative_slope(self, value) -> None:
        self.slope = real("LeakyReLU", "negative_slope", value)
        self._given_slope = as_given(self.slope, value)

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace, f"negative_slope={self.negative_slope}")

    FORWARD_IS_KIND = True

    def forward(self, x):
        if self.inplace:
            return activations.leaky_relu(check_tensor("LeakyReLU", x), self.slope, True)
        return super().forward(x)


class GELU(Activation):
    """GELU, exact (erf) or ``approximate="tanh"``."""

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        super().__init__("gelu")
        self.approximate = approximate

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"

    FORWARD_IS_KIND = True

    def _kind_covers(self) -> bool:
        return self.approximate == "none"

    def forward(self, x):
        return activations.gelu(check_tensor("GELU", x), self.approximate)

    def reverse(self, x, grad_out):
        if self.approximate == "none":
            return super().reverse(x, grad_out)
        return Module.reverse(self, x, grad_out)


class Softplus(Activation):
    """log(1 + exp(beta x)) / beta, linear (x) where beta x > threshold, as PyTorch's."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__("softplus")
        self.beta = as_given(real("Softplus", "beta", beta), beta)
        self.threshold = as_given(real("Softplus", "threshold", threshold), threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"

    FORWARD_IS_KIND = True

    def _kind_covers(self) -> bool:
        return self.beta == 1.0 and self.threshold == 20.0

    def forward(self, x):
        check_tensor("Softplus", x)
        return activations.softplus(x, self.beta, self.threshold)

    def reverse(self, x, grad_out):
        if self.beta == 1.0 and self.threshold == 20.0:
            return super().reverse(x, grad_out)
        return Module.reverse(self, x, grad_out)


class _Composed(Module):
    """An activation written with tensor ops; reverse from the tape. ``_fn(x, inplace)``."""

    inplace = False

    def forward(self, x):
        return self._fn(check_tensor(type(self).__name__, x), self.inplace)


class ELU(_Composed):
    """x where x > 0, else alpha (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = as_given(real("ELU", "alpha", alpha), alpha)
        self.inplace = bool(inplace)

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace, f"alpha={self.alpha}")

    def _fn(self, x, inplace):
        return activations.elu(x, self.alpha, inplace)


class _ComposedInPlace(_Composed):
    """A composed activation whose one setting is ``inplace``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace)


class SELU(_ComposedInPlace):
    """scale * elu(x, alpha) with PyTorch's fixed constants."""

    def _fn(self, x, inplace):
        return activations.selu(x, inplace)


class Mish(_ComposedInPlace):
    """x * tanh(softplus(x))."""

    def _fn(self, x, inplace):
        return activations.mish(x, inplace)


class Hardtanh(_Composed):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val = as_given(real("Hardtanh", "min_val", min_val), min_val)
        self.max_val = as_given(real("Hardtanh", "max_val", max_val), max_val)
        if self.min_val > self.max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} is above max_val {max_val}")
        self.inplace = bool(inplace)

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace, f"min_val={self.min_val}, max_val={self.max_val}")

    def _fn(self, x, inplace):
        return activations.hardtanh(x, self.min_val, self.max_val, inplace)


class _AlongDim(_Composed):
    """An activation along one axis ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"{type(self).__name__}: dim must be an int, got {dim!r}")
        self.dim = int(dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(_AlongDim):
    """x - logsumexp(x) along ``dim`` (default the last axis, fastnn's API contract, with
    a warning where PyTorch's implicit dim differs: :func:`~fastnn.ops.nnops.last_axis`);
    an explicit ``dim=None`` picks PyTorch's implicit dim with its deprecation warning (see
    :func:`~fastnn.ops.nnops.implicit_dim`)."""

    def __init__(self, dim=UNSET):
        if dim is None:
            Module.__init__(self)
            self.dim = None
        else:
            super().__init__(dim_of("LogSoftmax", dim, UNSET, -1))
        self._last_axis = dim is UNSET

    def _fn(self, x, inplace):
        dim = implicit_dim("log_softmax", x.ndim) if self.dim is None else self.dim
        if x.ndim >= 3 and self.dim == -1 and getattr(self, "_last_axis", False):
            last_axis("LogSoftmax", x.ndim)
        return nnops.log_softmax(x, dim)


class GLU(_AlongDim):
    """a * sigmoid(b) for the two halves a, b of x along ``dim`` (PyTorch's GLU)."""

    def _fn(self, x, inplace):
        return activations.glu(x, self.dim)
