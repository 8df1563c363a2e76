"""Activations on tensors, and the table of activation kinds that ``nn.Activation``,
``F.activation``, ``F.linear(..., activation=)`` and ``F.bias_act`` accept.

Each activation is an op (an optional hook with a composite, see the hook
specification). A new kind is one function registered with :func:`kind`; it
gets its gradient from the tape of whatever it is written with, and
``bias_act`` takes it through the composite (bias add, then the activation),
so no backend has to know it. The kinds in ``hookspec.BIAS_ACT_KINDS`` also
reach the backends' fused bias + activation kernels.
"""

from __future__ import annotations

import math

from fastnn.api import dtypes, hookspec
from fastnn.api.args import real
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import switches
from fastnn.autograd.saved import saved_for_grad
from fastnn.ops import joining
from fastnn.ops.core import astype
from fastnn.ops.elementwise import add, compare, div, exp, maximum, minimum, mul, where
from fastnn.ops.operands import align
from fastnn.ops.table import FUNCTIONAL, public
from fastnn.ops.tensor import Tensor

ACTIVATIONS: dict = {}  # kind -> fn(x, slope)
FUSED_KINDS = frozenset(hookspec.BIAS_ACT_KINDS)  # the kinds of the bias_act hook


def kind(name: str, uses_slope: bool = False):
    """Register the decorated ``fn(x)`` (``fn(x, slope)`` with ``uses_slope``) as kind ``name``."""

    def register(fn):
        ACTIVATIONS[name] = fn if uses_slope else (lambda x, slope: fn(x))
        return fn

    return register


def written(x, compute) -> Tensor:
    """``compute(x)`` written into x (``inplace=True``), as PyTorch's in-place activations:
    while the tape records, ``compute`` runs on a copy of x, so the arrays its backward
    keeps are not the ones the write overwrites (``F.relu(h, inplace=True)`` in a training
    step backpropagates)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"inplace=True needs a Tensor, got {type(x).__name__}")
    source = x.clone() if x._requires_grad and switches.grad else x
    return x.copy_(compute(source))


def _hook(op: str, x: Tensor, slope=0.0) -> Tensor:
    """The activation hook ``op`` (the backend's, or its composite) on one tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x._dtype.is_floating:
        x = astype(x, dtypes.get_default_dtype())  # as PyTorch: the default float
    ops = x._device.ops
    data = ops.leaky_relu(x._data, slope) if op == "leaky_relu" else getattr(ops, op)(x._data)
    out = Tensor._make(data, x._dtype, x._device)
    return attach(out, op, (x,), saved_for_grad(op, x._data, data),
                  slope if op == "leaky_relu" else None)


ACTIVATIONS["identity"] = lambda x, slope: x


@public(method=True, top=True)
@kind("relu")
def relu(x, inplace=False):
    """max(x, 0); an integer tensor stays integer, as in PyTorch (``inplace=True`` writes
    the result into x)."""
    if inplace:
        return written(x, relu)
    if isinstance(x, Tensor) and x._dtype.is_floating:  # the common case, with nothing to check
        data = x._device.ops.relu(x._data)
        out = Tensor._make(data, x._dtype, x._device)
        if not (x._requires_grad or switches.anomaly):
            return out
        return attach(out, "relu", (x,), saved_for_grad("relu", x._data, data))
    if isinstance(x, Tensor) and x._dtype is not dtypes.bool_:
        return Tensor._make(x._device.ops.maximum(x._data, 0), x._dtype, x._device)
    return _hook("relu", x)


@public()
@kind("leaky_relu", uses_slope=True)
def leaky_relu(x, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    if inplace:
        return written(x, lambda t: leaky_relu(t, negative_slope))
    return _hook("leaky_relu", x, real("leaky_relu", "negative_slope", negative_slope))


@public(method=True, top=True)
@kind("sigmoid")
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _hook("sigmoid", x)


@public(method=True, top=True)
@kind("tanh")
def tanh(x):
    """Hyperbolic tangent."""
    return _hook("tanh", x)


@kind("gelu")
def _gelu_exact(x):
    return _hook("gelu", x)


@public()
def gelu(x, approximate="none"):
    """GELU: exact with erf (``approximate="none"``, PyTorch's default), or PyTorch's tanh
    form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with ``approximate="tanh"``."""
    if approximate == "none":
        return _hook("gelu", x)
    if approximate != "tanh":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _floating("gelu", x)
    inner = mul(add(x, mul(mul(mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
    return mul(mul(x, add(tanh(inner), 1.0)), 0.5)


@public()
@kind("silu")
def silu(x, inplace=False):
    """x * sigmoid(x) (Swish with beta 1)."""
    if inplace:
        return written(x, silu)
    return _hook("silu", x)


@public()
@kind("softplus")
def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, computed stably; x itself where beta x > threshold,
    as PyTorch's (with beta 1 the stable form is already x there, to rounding)."""
    if beta == 1.0 and threshold == 20.0:
        return _hook("softplus", x)
    beta, threshold = real("softplus", "beta", beta), real("softplus", "threshold", threshold)
    x = _floating("softplus", x)
    scaled = mul(x, beta)
    soft = _hook("softplus", scaled)
    return where(compare("greater", scaled, threshold), x,
                 soft if beta == 1.0 else div(soft, beta))


def _floating(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x._dtype.is_floating else astype(x, dtypes.get_default_dtype())


def _negative_part(x: Tensor, alpha: float) -> Tensor:
    """alpha * (exp(min(x, 0)) - 1): the negative branch of ELU, finite for every x (the
    min keeps exp from overflowing where the branch is not taken, which would make its
    gradient 0 * inf). At x = 0 the branch's own slope counts (alpha), as PyTorch's."""
    not_positive = where(x > 0, 0.0, x)  # a where, not min: min would halve the slope at 0
    return mul(add(exp(not_positive), -1.0), alpha)


@public()
def elu(x, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    if inplace:
        return written(x, lambda t: elu(t, alpha))
    x = _floating("elu", x)
    return where(x > 0, x, _negative_part(x, real("elu", "alpha", alpha)))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@public(top=True)
def selu(x, inplace=False):
    """scale * elu(x, alpha) with PyTorch's constants (alpha 1.67326..., scale 1.05070...)."""
    if inplace:
        return written(x, selu)
    x = _floating("selu", x)
    return mul(where(x > 0, x, _negative_part(x, _SELU_ALPHA)), _SELU_SCALE)


@public()
def mish(x, inplace=False):
    """x * tanh(softplus(x))."""
    if inplace:
        return written(x, mish)
    x = _floating("mish", x)
    return mul(x, tanh(softplus(x)))


@public()
def hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]."""
    if inplace:
        return written(x, lambda t: hardtanh(t, min_val, max_val))
    if not isinstance(x, Tensor):
        raise TypeError(f"hardtanh: expected a Tensor, got {type(x).__name__}")
    low, high = real("hardtanh", "min_val", min_val), real("hardtanh", "max_val", max_val)
    if low > high:
        raise ValueError(f"hardtanh: min_val {low} is above max_val {high}")
    if not x._dtype.is_floating and x._dtype.name != "bool":
        return integer_clip(x, low, high)
    return clip_flat(_floating("hardtanh", x), low, high)


def integer_clip(x: Tensor, low: float, high: float) -> Tensor:
    """An integer tensor limited to [low, high] in its own dtype, each bound truncated
    toward 0, as PyTorch's hardtanh and relu6 of integers (no gradient to carry)."""
    return minimum(maximum(x, int(low)), int(high))


def clip_flat(x: Tensor, low: float, high: float) -> Tensor:
    """x limited to [low, high] with PyTorch's hardtanh gradient: 1 strictly inside, 0 at
    and beyond the bounds (NaN stays NaN)."""
    inside = (x > low) & (x < high)
    outside = where(x < high, float(low), where(x.detach() != x.detach(), x.detach(), high))
    return where(inside, x, outside)


@public()
def glu(x, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of ``x`` along ``dim``."""
    x = _floating("glu", x)
    if x.ndim == 0 or not -x.ndim <= dim < x.ndim or x.shape[dim] % 2:
        raise ValueError(f"glu: dim {dim} of shape {x.shape} must exist and have an even size "
                         f"(it is split into two halves)")
    a, b = joining.chunk(x, 2, dim)
    return mul(a, sigmoid(b))


kind("elu")(elu)
kind("selu")(selu)
kind("mish")(mish)


def add_table_kinds() -> None:
    """Kinds ``sin`` and ``cos`` from the op table, once every op module has filled it
    (they are elementwise ops of their own; ``fastnn.ops`` calls this after its imports)."""
    for name in ("sin", "cos"):
        if name in FUNCTIONAL and name not in ACTIVATIONS:
            kind(name)((lambda op: lambda x: op(_floating(op.__name__, x)))(FUNCTIONAL[name]))


def _check_kind(op: str, name) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{op}: kind must be the name of an activation "
                        f"({', '.join(sorted(ACTIVATIONS))}), got {type(name).__name__}; is the "
                        "order of the arguments right?")
    if name not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {name!r}; choose one of "
                         f"{', '.join(sorted(ACTIVATIONS))}")


@public()
def activation(kind: str, x: Tensor, slope=0.01) -> Tensor:
    """Apply the activation named ``kind`` (a key of ACTIVATIONS); ``slope`` for leaky_relu."""
    _check_kind("activation", kind)
    return ACTIVATIONS[kind](x, real("activation", "slope", slope))


@public()
def bias_act(x: Tensor, bias: Tensor, kind: str = "identity", slope=0.01) -> Tensor:
    """activation(x + bias), bias (features,) along the last axis: one fused hook for the
    kinds every backend knows (``hookspec.BIAS_ACT_KINDS``), the composite for the rest."""
    for t in (x, bias):
        if not isinstance(t, Tensor):
            raise TypeError(f"bias_act: expected Tensors, got {type(t).__name__}")
    x, bias = align("bias_act", x, bias)
    _check_kind("bias_act", kind)
    if bias.ndim != 1 or not x.ndim or bias.shape[0] != x.shape[-1]:
        raise ValueError(f"bias_act: bias {bias.shape} does not match the last axis of {x.shape}")
    if kind not in FUSED_KINDS:
        return activation(kind, add(x, bias), slope)
    return bias_act_raw(x, bias, kind, real("bias_act", "slope", slope))


def bias_act_raw(x: Tensor, bias: Tensor, kind: str, slope: float) -> Tensor:
    """:func:`bias_act` for callers that checked its arguments (one dtype and device, bias
    along x's last axis, a kind of ``hookspec.BIAS_ACT_KINDS``, a real slope): the hook
    and the tape's node, nothing checked again (nn.Linear's fused forward, F.linear's)."""
    data = x._device.ops.bias_act(x._data, bias._data, kind, slope)
    out = Tensor._make(data, x._dtype, x._device)
    if not (x._requires_grad or bias._requires_grad or switches.anomaly):
        return out  # nothing to record: skip attach's call
    return attach(out, "bias_act", (x, bias), saved_by_bias_act(kind, x._data, bias._data, data),
                  (kind, slope))


def saved_by_bias_act(kind: str, x, bias, out) -> tuple:
    """What a bias_act node keeps for its rule: nothing for the identity (a bias added
    reads nothing back, so the output may be written in place afterwards, as PyTorch's
    ``nn.Linear`` then ``nn.ReLU(inplace=True)``), else the input, bias and output."""
    return () if kind == "identity" else (x, bias, out)
