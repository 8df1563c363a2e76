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

from fastnn.api import dtypes, hookspec
from fastnn.api.args import real
from fastnn.autograd.engine import attach
from fastnn.ops.core import astype
from fastnn.ops.elementwise import add, align
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

ACTIVATIONS: dict = {}  # kind -> fn(x, slope)
_FUSED_KINDS = frozenset(hookspec.BIAS_ACT_KINDS)


def kind(name: str, uses_slope: bool = False):
    """Register the decorated ``fn(x)`` (``fn(x, slope)`` with ``uses_slope``) as kind ``name``."""

    def register(fn):
        ACTIVATIONS[name] = fn if uses_slope else (lambda x, slope: fn(x))
        return fn

    return register


def _hook(op: str, x: Tensor, slope=0.0) -> Tensor:
    """The activation hook ``op`` (the backend's, or its composite) on one tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x._dtype.is_floating:
        x = astype(x, dtypes.float32)
    ops = x._device.ops
    data = ops.leaky_relu(x._data, slope) if op == "leaky_relu" else getattr(ops, op)(x._data)
    out = Tensor._make(data, x._dtype, x._device)
    return attach(out, op, (x,), (x._data, data), slope if op == "leaky_relu" else None)


ACTIVATIONS["identity"] = lambda x, slope: x


@public(method=True)
@kind("relu")
def relu(x):
    """max(x, 0); an integer tensor stays integer, as in PyTorch."""
    if isinstance(x, Tensor) and not x._dtype.is_floating and x._dtype is not dtypes.bool_:
        return Tensor._make(x._device.ops.maximum(x._data, 0), x._dtype, x._device)
    return _hook("relu", x)


@public()
@kind("leaky_relu", uses_slope=True)
def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, else negative_slope * x."""
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


@public()
@kind("gelu")
def gelu(x):
    """Exact GELU (with erf), as PyTorch's default."""
    return _hook("gelu", x)


@public()
@kind("silu")
def silu(x):
    """x * sigmoid(x) (Swish with beta 1)."""
    return _hook("silu", x)


@public()
@kind("softplus")
def softplus(x):
    """log(1 + exp(x)), computed stably."""
    return _hook("softplus", x)


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
    if kind not in _FUSED_KINDS:
        return activation(kind, add(x, bias), slope)
    slope = real("bias_act", "slope", slope)
    data = x._device.ops.bias_act(x._data, bias._data, kind, slope)
    out = Tensor._make(data, x._dtype, x._device)
    return attach(out, "bias_act", (x, bias), (x._data, bias._data, data), (kind, slope))
