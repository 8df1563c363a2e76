"""The rest of PyTorch's activation modules: ReLU6, Hardsigmoid, Hardswish, Softsign,
LogSigmoid, Softmin, Softshrink, Hardshrink, Tanhshrink, Threshold, RReLU, PReLU and CELU,
each over its ``F.`` function (``fastnn/ops/activations_more.py``) with PyTorch's arguments,
reprs and (PReLU's ``weight``) state_dict keys."""

from __future__ import annotations

import numbers

from fastnn.api.args import as_given, integer, real
from fastnn.nn import init as nn_init
from fastnn.nn.activation_classes import Hardtanh, inplace_repr
from fastnn.nn.module import Module, check_tensor
from fastnn.nn.parameter import const_init
from fastnn.ops import activations_more as act


class _Function(Module):
    """A module applying ``FUNCTION`` (an ``F.`` name) with the module's settings."""

    ARGS: tuple = ()  # the attribute names passed on, in order
    inplace = False
    SHOWS_INPLACE = True  # whether PyTorch's repr says inplace=True

    def forward(self, x):
        check_tensor(type(self).__name__, x)
        return self._apply(x)

    def _apply(self, x):
        fn = getattr(act, self.FUNCTION)
        return fn(x, *(getattr(self, name) for name in self.ARGS))

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace and self.SHOWS_INPLACE,
                            ", ".join(f"{name}={getattr(self, name)}" for name in self.ARGS))


class _InPlace(_Function):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)

    def _apply(self, x):
        return getattr(act, self.FUNCTION)(x, inplace=self.inplace)


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): a Hardtanh(0, 6), as PyTorch's (``isinstance(m, nn.Hardtanh)``
    holds for it, as scripts that fold clipping layers expect)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return inplace_repr(self.inplace)

    def _fn(self, x, inplace):
        return act.relu6(x, inplace=inplace)


class Hardsigmoid(_InPlace):
    """relu6(x + 3) / 6."""

    FUNCTION = "hardsigmoid"
    SHOWS_INPLACE = False


class Hardswish(_InPlace):
    """x * relu6(x + 3) / 6."""

    FUNCTION = "hardswish"
    SHOWS_INPLACE = False


class Softsign(_Function):
    """x / (1 + |x|)."""

    FUNCTION = "softsign"


class LogSigmoid(_Function):
    """log(sigmoid(x))."""

    FUNCTION = "logsigmoid"


class Tanhshrink(_Function):
    """x - tanh(x)."""

    FUNCTION = "tanhshrink"


class Softmin(_Function):
    """softmax(-x) along ``dim`` (None: PyTorch's implicit dim, with its warning)."""

    FUNCTION = "softmin"
    ARGS = ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"Softmin: dim must be an int or None, got {dim!r}")
        self.dim = dim


class Softshrink(_Function):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    FUNCTION = "softshrink"
    ARGS = ("lambd",)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = as_given(real("Softshrink", "lambd", lambd), lambd)
        if self.lambd < 0:
            raise ValueError(f"Softshrink: lambd must be >= 0, got {lambd}")

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Function):
    """x where |x| > lambd, else 0."""

    FUNCTION = "hardshrink"
    ARGS = ("lambd",)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = as_given(real("Hardshrink", "lambd", lambd), lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Threshold(_Function):
    """x where x > threshold, else value."""

    FUNCTION = "threshold"
    ARGS = ("threshold", "value")

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = as_given(real("Threshold", "threshold", threshold), threshold)
        self.value = as_given(real("Threshold", "value", value), value)
        self.inplace = bool(inplace)

    def _apply(self, x):
        return act.threshold(x, self.threshold, self.value, inplace=self.inplace)


class CELU(_Function):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""

    FUNCTION = "celu"
    ARGS = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = as_given(real("CELU", "alpha", alpha), alpha)
        if self.alpha == 0:
            raise ValueError("CELU: alpha must be nonzero")
        self.inplace = bool(inplace)

    def _apply(self, x):
        return act.celu(x, self.alpha, inplace=self.inplace)


class RReLU(_Function):
    """Randomized leaky ReLU: a slope drawn from [lower, upper] per element in training,
    their mean in evaluation."""

    ARGS = ("lower", "upper")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = as_given(real("RReLU", "lower", lower), lower)
        self.upper = as_given(real("RReLU", "upper", upper), upper)
        if self.lower > self.upper:
            raise ValueError(f"RReLU: lower {lower} is above upper {upper}")
        self.inplace = bool(inplace)

    def _apply(self, x):
        return act.rrelu(x, self.lower, self.upper, self.training, self.inplace)


class PReLU(Module):
    """x where x > 0, else weight * x, with a learned ``weight`` of ``num_parameters``
    elements (1, or one per channel: dim 1 of the input), starting at ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = integer("PReLU", "num_parameters", num_parameters)
        self.init = real("PReLU", "init", init)
        self.weight = const_init((self.num_parameters,), self.init, "other", dtype, device)

    def reset_parameters(self) -> None:
        """weight back to ``init``, in place (PyTorch's)."""
        nn_init.constant_(self.weight, self.init)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"

    def forward(self, x):
        return act.prelu(check_tensor("PReLU", x), self.weight)
