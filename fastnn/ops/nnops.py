"""Neural-network ops on tensors: matmul, linear, conv1d, softmax, RMS division.

Fused ops (softmax, cross-entropy, rms_div, bias_act) call the backend's fused
hook when it has one and the core's composite default otherwise; either way
the backward rule in :mod:`fastnn.autograd.rules` applies.
"""

from __future__ import annotations

import numbers
import warnings

from fastnn.api import dtypes
from fastnn.api.args import integer, nonnegative
from fastnn.api.errors import OutOfRangeError, ShapeError
from fastnn.api.user_warning import warn_user
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import switches
from fastnn.ops.activations import activation as _activation_op
from fastnn.ops.activations import bias_act, bias_act_raw
from fastnn.ops.conv import conv1d_sides, side_padding, with_bias
from fastnn.ops.core import astype, broadcast_shape, check_same_device
from fastnn.ops.movement import check_targets, reshape
from fastnn.ops.operands import same_dtype
from fastnn.ops.spelling import UNSET, dim_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_make = Tensor._make  # bound once: the hot paths skip the classmethod's lookup


def _float_pair(op, a, b):
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
    return same_dtype(op, a, b)


@public(method=True, top=True)
def matmul(a: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy semantics (batched, broadcasting; 1-D operands promoted)."""
    if isinstance(a, Tensor) and isinstance(other, Tensor) and a._dtype is other._dtype and (
            a._device is other._device):
        sa, sb = a._data.shape, other._data.shape
        if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:  # the common case, checked
            out = _make(a._device.ops.matmul(a._data, other._data), a._dtype, a._device)
            if not (a._requires_grad or other._requires_grad or switches.anomaly):
                return out
            return attach(out, "matmul", (a, other), (a._data, other._data))
    a, other = _float_pair("matmul", a, other)
    if a.ndim == 0 or other.ndim == 0:
        raise ValueError("matmul: operands must have at least 1 dimension; use * for scalars")
    squeeze = []
    if a.ndim == 1:
        a = reshape(a, (1, a.shape[0]))
        squeeze.append(-2)
    if other.ndim == 1:
        other = reshape(other, (other.shape[0], 1))
        squeeze.append(-1)
    if a.shape[-1] != other.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {other.shape} are not aligned: "
            f"{a.shape[-1]} (last dim of input) != {other.shape[-2]} (second-to-last dim of "
            f"other)"
        )
    batch = broadcast_shape("matmul (batch dims)", a.shape[:-2], other.shape[:-2])
    out = Tensor._make(a._device.ops.matmul(a._data, other._data), a._dtype, a._device)
    out = attach(out, "matmul", (a, other), (a._data, other._data))
    if squeeze:
        shape = (batch + (a.shape[-2],) * (-2 not in squeeze)
                 + (other.shape[-1],) * (-1 not in squeeze))
        out = reshape(out, shape)
    return out


@public()
def linear(x: Tensor, weight: Tensor, bias=None, activation: str = "identity") -> Tensor:
    """activation(x @ weight.T + bias), weight (out, in) as in PyTorch; a weight vector
    (in,) gives x @ weight, the last axis dropped, as PyTorch's.

    Its own tape node, so that the weight gradient g.T @ x comes out in the
    weight's (out, in) layout rather than as a transposed view.
    """
    if activation == "identity" and isinstance(x, Tensor) and isinstance(weight, Tensor):
        out = _plain_linear(x, weight, bias)
        if out is not None:
            return out
    x, weight = _float_pair("linear", x, weight)
    if weight.ndim == 1 and x.ndim and x.shape[-1] == weight.shape[0]:
        # a weight vector: x @ weight, the last axis dropped, as PyTorch's
        out = linear(x, reshape(weight, (1, weight.shape[0])), None, activation="identity")
        out = reshape(out, x.shape[:-1])
        out = out if bias is None else out + bias
        return out if activation == "identity" else _activation_op(activation, out)
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input with {x.shape[-1] if x.ndim else 0} features (shape {x.shape}) does "
            f"not match weight {weight.shape}, which expects {weight.shape[-1]} input features"
        )
    data = x._device.ops.linear(x._data, weight._data)
    out = attach(Tensor._make(data, x._dtype, x._device), "linear", (x, weight),
                 (x._data, weight._data))
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"linear: bias must be a Tensor or None, got {type(bias).__name__}; "
                            "convert it with fnn.tensor(...)")
        same_dtype("linear (bias)", out, bias)
        return bias_act(out, bias, activation)
    return out if activation == "identity" else _activation_op(activation, out)


def _plain_linear(x, weight, bias):
    """x @ weight.T (+ bias) for one floating dtype and device and matching shapes, checked
    here at once (the tape as the general path records it); else None."""
    dtype, device = x._dtype, x._device
    x_shape, w_shape = x._data.shape, weight._data.shape
    if not (weight._dtype is dtype and weight._device is device and dtype.is_floating
            and len(w_shape) == 2 and x_shape and x_shape[-1] == w_shape[1]):
        return None
    if bias is not None and not (isinstance(bias, Tensor) and bias._dtype is dtype
                                 and bias._device is device and bias._data.shape == w_shape[:1]):
        return None
    out = linear_raw(x, weight)
    return out if bias is None else bias_act_raw(out, bias, "identity", 0.01)


def linear_raw(x: Tensor, weight: Tensor) -> Tensor:
    """x @ weight.T with its tape node, for callers that checked x and weight (one floating
    dtype and device, x's last axis weight's second): :func:`linear`'s and nn.Linear's."""
    out = Tensor._make(x._device.ops.linear(x._data, weight._data), x._dtype, x._device)
    if x._requires_grad or weight._requires_grad or switches.anomaly:
        return attach(out, "linear", (x, weight), (x._data, weight._data))
    return out


def _single(value):
    """A one-element tuple or list, ``(2,)``, as its element; anything else as given."""
    return value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value


def _positive_int(op, name, value, minimum):
    return integer(op, name, value, minimum)  # also refuses True, which is no stride


@public(top=True)
def conv1d(x: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation as PyTorch's conv1d: x (N, C_in, L), or one sample (C_in, L);
    weight (C_out, C_in/groups, K).

    ``padding``: an int, "same", "valid" or (before, after).
    """
    x, weight = _float_pair("conv1d", x, weight)
    if x.ndim == 2 and weight.ndim == 3:  # one sample, as PyTorch's: a batch of one
        out = conv1d(reshape(x, (1,) + x.shape), weight, bias, stride, padding, dilation,
                     groups)
        return reshape(out, out.shape[1:])
    # nn.Conv1d's attributes are 1-tuples, (2,), as PyTorch's: taken as the int
    stride, padding, dilation = (_single(v) for v in (stride, padding, dilation))
    stride = _positive_int("conv1d", "stride", stride, 1)
    if isinstance(padding, (str, tuple, list)):  # "same", "valid" or (before, after)
        dilation = _positive_int("conv1d", "dilation", dilation, 1)
        span = dilation * (weight.shape[-1] - 1) + 1
        (sides,) = side_padding("conv1d", padding, (span,), (stride,))
        if sides[0] != sides[1]:
            return conv1d_sides(x, weight, bias, stride, sides, dilation, groups)
        padding = sides[0]
    padding = _positive_int("conv1d", "padding", padding, 0)
    dilation = _positive_int("conv1d", "dilation", dilation, 1)
    groups = _positive_int("conv1d", "groups", groups, 1)
    if x.ndim != 3 or weight.ndim != 3:
        raise ValueError(
            f"conv1d: expected x (N, C_in, L) and weight (C_out, C_in/groups, K), got shapes "
            f"{x.shape} and {weight.shape}"
        )
    n, c_in, length = x.shape
    c_out, c_in_g, k = weight.shape
    if c_in % groups or c_out % groups:
        raise ValueError(
            f"conv1d: C_in={c_in} and C_out={c_out} must be divisible by groups={groups}"
        )
    if c_in_g * groups != c_in:
        raise ValueError(
            f"conv1d: weight expects {c_in_g * groups} input channels ({c_in_g} per group x "
            f"{groups} groups) but x has {c_in}"
        )
    length_out = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    if k < 1 or length_out < 1:
        raise ShapeError(
            f"conv1d: kernel size {k} with dilation {dilation} does not fit an input of length "
            f"{length} padded by {padding} on each side (output length {length_out})"
        )
    attrs = (stride, padding, dilation, groups)
    data = x._device.ops.conv1d(x._data, weight._data, *attrs)
    out = attach(Tensor._make(data, x._dtype, x._device), "conv1d", (x, weight),
                 (x._data, weight._data), attrs)
    return with_bias("conv1d", out, bias, c_out, 1)


def _floating(op: str, x) -> Tensor:
    """``x`` itself when floating point, else cast to the default float dtype (as the
    activations do, and PyTorch)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x._dtype.is_floating else astype(x, dtypes.get_default_dtype())


def _normalized_input(op: str, x, dtype) -> Tensor:
    """softmax's and log_softmax's ``x``: converted to ``dtype=`` first, and floating
    point (an integer ``x`` is refused, as PyTorch does)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = astype(x, dtype)
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: defined on floating tensors, not {x._dtype.name} (as "
                        f"PyTorch); pass dtype=fnn.float32 or convert with .float()")
    return x


def _axis(op, x, axis):
    if type(axis) is int and -x.ndim <= axis < x.ndim:  # the common case, checked at once
        return axis % x.ndim
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise OutOfRangeError(f"{op}: axis {axis} out of range for shape {x.shape}")
    return axis % x.ndim


def implicit_dim(op: str, ndim: int) -> int:
    """PyTorch's dim for a softmax-like call without one: 0 for 0-, 1- and 3-D input, else
    1 (with PyTorch's deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def last_axis(op: str, ndim: int) -> int:
    """The dim of a softmax-like call given none: the last axis (the API contract). Where
    PyTorch's deprecated implicit dim differs (0 for 3-D input, 1 for 4-D and more), a
    script ported from PyTorch would change meaning without a word, so this warns, naming
    both dims; PyTorch warns on the same calls."""
    if ndim >= 3:
        warn_user(f"{op}: no dim given, so fastnn takes the last axis (dim={ndim - 1}) of "
                  f"this {ndim}-D input, where PyTorch's deprecated implicit choice takes "
                  f"dim={0 if ndim == 3 else 1}; pass dim= to say which")
    return -1


@public(method=True, top=True)
def softmax(x: Tensor, dim=UNSET, *, axis=UNSET, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably. A 0-d ``x`` is its own
    row (as PyTorch); a size-0 dim gives an empty result. ``dtype=``: the input
    converted first (a float16 model's softmax in float32, as in PyTorch). Without a
    dim, the last axis: the API contract's default, with a warning where PyTorch's F.softmax
    would take another (its deprecated implicit dim, :func:`implicit_dim`, which
    nn.Softmax(dim=None) keeps; :func:`last_axis`)."""
    if (type(dim) is int and axis is UNSET and dtype is None and isinstance(x, Tensor)
            and x._dtype.is_floating):
        data = x._data  # the common call, checked here at once
        shape = data.shape
        rank = len(shape)
        if -rank <= dim < rank and 0 not in shape:
            dim %= rank
            data = x._device.ops.softmax(data, dim)
            out = Tensor._make(data, x._dtype, x._device)
            if not (x._requires_grad or switches.anomaly):
                return out
            return attach(out, "softmax", (x,), (data,), dim)
    x = _normalized_input("softmax", x, dtype)
    if dim is UNSET and axis is UNSET:
        axis = last_axis("softmax", x.ndim)
    axis = dim_of("softmax", dim, axis, -1)
    if x.ndim == 0:
        _axis("softmax", reshape(x, (1,)), axis)
        return reshape(softmax(reshape(x, (1,)), 0), ())
    axis = _axis("softmax", x, axis)
    if not x.numel():
        return x * 1.0
    data = x._device.ops.softmax(x._data, axis)
    return attach(Tensor._make(data, x._dtype, x._device), "softmax", (x,), (data,), axis)


@public(method=True, top=True)
def log_softmax(x: Tensor, dim=UNSET, *, axis=UNSET, dtype=None) -> Tensor:
    """x - logsumexp(x) along ``dim``, computed stably. A 0-d ``x`` is its own
    row (as PyTorch); a size-0 dim gives an empty result. ``dtype=``: the input
    converted first. Without a dim, the last axis, as :func:`softmax`."""
    x = _normalized_input("log_softmax", x, dtype)
    if dim is UNSET and axis is UNSET:
        axis = last_axis("log_softmax", x.ndim)
    axis = dim_of("log_softmax", dim, axis, -1)
    if x.ndim == 0:
        _axis("log_softmax", reshape(x, (1,)), axis)
        return reshape(log_softmax(reshape(x, (1,)), 0), ())
    axis = _axis("log_softmax", x, axis)
    if not x.numel():
        return x * 1.0
    data = x._device.ops.log_softmax(x._data, axis)
    return attach(Tensor._make(data, x._dtype, x._device), "log_softmax", (x,), (data,), axis)


@public()
def rms_div(x: Tensor, eps=1e-6) -> Tensor:
    """x / sqrt(mean(x**2 over the last axis) + eps)."""
    x = _floating("rms_div", x)
    if x.ndim == 0:
        raise ValueError("rms_div: needs at least one axis")
    data, r = x._device.ops.rms_div(x._data, nonnegative("rms_div", "eps", eps))
    return attach(Tensor._make(data, x._dtype, x._device), "rms_div", (x,), (data, r))


def _check_rows(logits, targets, ignore_index=None) -> None:
    for name, value in (("logits", logits), ("targets", targets)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"cross_entropy: {name} must be a fastnn Tensor, got {type(value).__name__}; "
                f"convert with fnn.tensor(...)"
            )
    if logits.ndim != 2:
        shape = getattr(logits, "shape", None)
        raise ValueError(f"cross_entropy: logits must be (N, C), got shape {shape}")
    if not logits._dtype.is_floating:
        raise TypeError(f"cross_entropy: logits must be floating point, got {logits._dtype}")
    check_same_device("cross_entropy", logits, targets)
    if targets.shape != (logits.shape[0],):
        raise ValueError(
            f"cross_entropy: targets must have shape ({logits.shape[0]},) to match logits "
            f"{logits.shape}, got {targets.shape}"
        )
    check_targets("cross_entropy", targets, logits.shape[1], ignore_index)


def softmax_cross_entropy_rows(logits: Tensor, targets: Tensor) -> Tensor:
    """Per-row cross-entropy of (N, C) logits against int targets (N,)."""
    _check_rows(logits, targets)
    loss, probs = logits._device.ops.softmax_cross_entropy(logits._data, targets._data)
    out = Tensor._make(loss, logits._dtype, logits._device)
    return attach(out, "softmax_cross_entropy", (logits, None), (probs, targets._data),
                  logits._dtype.name)


def cross_entropy_loss_rows(logits: Tensor, targets: Tensor, ignore_index: int,
                            reduction: str, label_smoothing: float) -> Tensor:
    """The cross-entropy of (N, C) logits against int targets (N,), label-smoothed, the rows
    whose target is ``ignore_index`` left out, reduced as PyTorch's (one hook)."""
    _check_rows(logits, targets, ignore_index)
    loss, probs, total = logits._device.ops.cross_entropy_loss(
        logits._data, targets._data, ignore_index, reduction, label_smoothing)
    out = Tensor._make(loss, logits._dtype, logits._device)
    return attach(out, "cross_entropy_loss", (logits, None), (probs, targets._data, total),
                  (ignore_index, reduction, label_smoothing))
