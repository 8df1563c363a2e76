"""Elementwise math, reductions and data movement on tensors, recorded on the tape.

Each function validates its arguments (so every backend raises the same clear
error), calls the resolved backend primitive, and attaches a tape node.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.user_warning import warn_user
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import switches
from fastnn.ops.core import astype, broadcast_shape, check_same_device
from fastnn.ops.operands import (
    align,
    arrays_as_tensors,
    as_tensor_like,
    check_scalar,
    python_bools,
    scalar_operand,
)
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_make = Tensor._make  # bound once: the hot paths below skip the classmethod's lookup


def binary(op: str, a, b, saved_fn=None) -> Tensor:
    """Broadcasting binary op ``op`` with dtype promotion; scalars stay scalars."""
    # Fast path for most calls in a model: two tensors of one dtype, device and shape, or a
    # floating tensor and a Python float/int. Nothing there needs promoting or checking, and
    # the general path below would spend more time deciding so than the op itself takes.
    # The op is called and its node recorded right here (not in a function of its own:
    # a Python call is a tenth of such an op's host time).
    if isinstance(a, Tensor):
        dtype = a._dtype
        if isinstance(b, Tensor):
            b_in, b_data = b, b._data
            plain = (b._dtype is dtype and b._device is a._device
                     and b_data.shape == a._data.shape and (dtype.is_floating or op != "div"))
        else:
            b_in, b_data = None, b
            plain = (type(b) is float or type(b) is int) and dtype.is_floating
        if plain:
            device, a_data = a._device, a._data
            out_data = getattr(device.ops, op)(a_data, b_data)
            out = _make(out_data, dtype, device)
            if a._requires_grad or (b_in is not None and b_in._requires_grad) or (
                    switches.anomaly):
                saved = saved_fn(a_data, b_data, out_data, a, b_in) if saved_fn else ()
                return attach(out, op, (a, b_in), saved)
            return out  # nothing to record: skip attach's call (a fifth of a tiny op's time)
    if type(a) is np.ndarray or type(b) is np.ndarray:  # (x + array, array + x)
        a, b = arrays_as_tensors(a, b)
    if isinstance(a, bool) or isinstance(b, bool):
        a, b = python_bools(a, b)
    if not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise TypeError(f"{op}: expected a Tensor operand, got {type(a).__name__}")
        b, value = scalar_operand(op, b, a)  # 2.5 - int_tensor is float, as 2.5 + int_tensor
        a = as_tensor_like(value, b)
    if isinstance(b, Tensor):
        a, b = align(op, a, b)
        broadcast_shape(op, a._data.shape, b._data.shape)
        b_data, b_in = b._data, b
    else:
        a, b_data = scalar_operand(op, a, b)
        b_in = None
    if op == "div" and not a._dtype.is_floating:  # true division: the default float
        a = astype(a, dtypes.get_default_dtype())
        if b_in is not None:
            b_in = astype(b_in, a._dtype)
            b_data = b_in._data
    ops = a._device.ops
    out_data = getattr(ops, op)(a._data, b_data)
    out = Tensor._make(out_data, a._dtype, a._device)
    saved = saved_fn(a._data, b_data, out_data, a, b_in) if saved_fn else ()
    return attach(out, op, (a, b_in), saved)


# what a binary op's backward keeps of its arrays (x, y, out), given its tensors a and b
# (b None for a scalar): as PyTorch's saved tensors, so that what is not kept may be written
# in place afterwards without a stale-save error. Module functions, not a lambda made at
# each call (0.05 us of an eager op's few).
def _inputs(x, y, out, a, b):
    return x, y


def _factors(x, y, out, a, b):
    """mul's: each factor only for the other's gradient (a dropout mask's, a constant's
    partner may then be written in place: ``nn.Dropout(inplace=True)``, ``x.mul_(...)``)."""
    return (x if b is not None and b._requires_grad else None, y if a._requires_grad else None)


def _dividend_and_divisor(x, y, out, a, b):
    """div's: the divisor, and the dividend only for the divisor's gradient (no result:
    ``y = x / s; y += 1`` then backpropagates)."""
    return (x if b is not None and b._requires_grad else None), y


def _pow_saved(x, y, out, a, b):
    """pow's: base and exponent, and the result only for a tensor exponent's gradient."""
    return x, y, (out if b is not None and b._requires_grad else None)


@public(method=True, top=True)
def add(a, other, *, alpha=1):
    """a + alpha * other, elementwise, with NumPy broadcasting and PyTorch's type promotion
    (either side may be a Python number)."""
    if alpha != 1:
        other = _times_alpha("add", a, other, alpha)
    return binary("add", a, other)


def _times_alpha(op: str, a, b, alpha):
    """``alpha * b`` for add's and sub's ``alpha=`` (a Python number, as PyTorch; a float
    alpha is refused where a and b are integers, as PyTorch refuses it, instead of making
    the integer sum a float one)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Number):
        raise TypeError(f"{op}: alpha must be a number, got {type(alpha).__name__}")
    if not isinstance(alpha, numbers.Integral) and not any(
            v._dtype.is_floating if isinstance(v, Tensor) else not isinstance(v, numbers.Integral)
            for v in (a, b)):
        raise RuntimeError(f"{op}: for integral input tensors, alpha must not be a floating "
                           f"point number, got {alpha!r} (as PyTorch); convert an input "
                           "with .float()")
    return mul(b, alpha) if isinstance(b, Tensor) else b * alpha


def _no_bool(op: str, *operands) -> None:
    """As NumPy and PyTorch: ``-`` has no meaning on booleans (backends disagreed: NumPy
    raised its own error, OpenCL computed XOR)."""
    if any(isinstance(t, Tensor) and t._dtype is dtypes.bool_ for t in operands):
        raise TypeError(f"{op}: not defined on bool tensors (as in NumPy and PyTorch); "
                        f"convert with .to(fnn.int64) first")


@public(method=True, top=True)
def sub(a, other, *, alpha=1):
    """a - alpha * other, elementwise, broadcast (not defined on bool tensors)."""
    _no_bool("sub", a, other)
    if alpha != 1:
        other = _times_alpha("sub", a, other, alpha)
    return binary("sub", a, other)


@public(method=True, top=True)
def mul(a, other):
    """a * other, elementwise, broadcast."""
    return binary("mul", a, other, _factors)


def div(a, b):
    """a / b, elementwise true division, broadcast (integers give a float result)."""
    if isinstance(b, numbers.Integral) and isinstance(a, Tensor) and a._dtype.is_integer:
        a = a.to(dtypes.get_default_dtype())  # (img / 255 of a uint8 img: 255 needs no uint8)
    elif isinstance(a, numbers.Integral) and isinstance(b, Tensor) and b._dtype.is_integer:
        b = b.to(dtypes.get_default_dtype())
    return binary("div", a, b, _dividend_and_divisor)


@public(method=True, top=True)
def pow(a, exponent):
    """a ** exponent, elementwise, broadcast; gradients flow to both a and exponent."""
    if isinstance(a, Tensor) and not a._dtype.is_floating:
        if (isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool)
                and exponent < 0):
            raise ValueError(f"pow: integers to negative integer powers are not allowed (as in "
                             f"NumPy and PyTorch), got {a._dtype.name} ** {exponent}; use a "
                             f"float exponent (x ** {float(exponent)}) or convert x to a float "
                             f"dtype")
        if (isinstance(exponent, Tensor) and a._dtype is dtypes.bool_
                and exponent._dtype is dtypes.bool_):
            raise TypeError("pow: not defined on two bool tensors (as in PyTorch); convert "
                            "with .to(fnn.int64) first")
    return binary("pow", a, exponent, _pow_saved)


@public(method=True, top=True)
def maximum(a, other):
    """The elementwise larger of a and other, broadcast."""
    return binary("maximum", a, other, _inputs)


@public(method=True, top=True)
def minimum(a, other):
    """The elementwise smaller of a and other, broadcast."""
    return binary("minimum", a, other, _inputs)


def compare(op: str, a, b) -> Tensor:
    """greater / less / equal: a bool tensor that never carries gradients."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(a).__name__}")
    if type(b) is np.ndarray:
        a, b = arrays_as_tensors(a, b)
    if isinstance(b, bool):  # mask == True, x < False: as PyTorch, True is 1 beside numbers
        a, b = python_bools(a, b)
    if isinstance(b, Tensor):
        a, b = align(op, a, b)
        broadcast_shape(op, a._data.shape, b._data.shape)
        b = b._data
    else:
        outside = _outside_range(a, b)
        if outside:  # x > 2**40 for int32 x: known without looking (NumPy's answer)
            answer = {"greater": outside < 0, "less": outside > 0, "equal": False}[op]
            return Tensor._make(a._device.ops.full(a.shape, answer, "bool", a._device.index),
                                dtypes.bool_, a._device)
        a, b = scalar_operand(op, a, b)
    return Tensor._make(getattr(a._device.ops, op)(a._data, b), dtypes.bool_, a._device)


def not_mask(mask: Tensor) -> Tensor:
    """NOT of a bool tensor, in one hook call (``compare("equal", mask, 0)`` casts the
    mask to int64 first, as PyTorch's True == 0 compares numbers: two calls)."""
    return Tensor._make(mask._device.ops.equal(mask._data, False), dtypes.bool_, mask._device)


def nonzero_mask(x: Tensor) -> Tensor:
    """True where x is nonzero (a NaN included), as a bool tensor: two hook calls."""
    return not_mask(compare("equal", x, 0))


def _outside_range(a: Tensor, value) -> int:
    """+1 / -1 where the Python integer ``value`` lies above / below integer tensor a's
    dtype range (so a comparison with it has one answer), else 0."""
    if a._dtype.is_floating or isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return 0
    low, high = dtypes.int_range(dtypes.int64 if a._dtype is dtypes.bool_ else a._dtype)
    return 1 if value > high else -1 if value < low else 0


_ALONE = object()  # where(cond) with no a and b


def _scalar_pair(a, b, cond: Tensor) -> tuple:
    """a and b as 0-d tensors on cond's device when both are Python scalars, in the
    dtype PyTorch gives the pair: the default float if either is a float, bool if both are
    bools, else int64."""
    from fastnn.ops.tensor import tensor

    for value in (a, b):
        if not isinstance(value, bool):
            check_scalar("where", value)
    if isinstance(a, bool) and isinstance(b, bool):
        kind = dtypes.bool_
    elif isinstance(a, float) or isinstance(b, float):
        kind = dtypes.get_default_dtype()
    else:
        kind = dtypes.int64
    return tensor(a, dtype=kind, device=cond.device), tensor(b, dtype=kind, device=cond.device)


def _positions(cond) -> tuple:
    """``nonzero(cond, as_tuple=True)``: one int64 tensor of positions per dim, found on
    the host (the count sets the shape)."""
    if not isinstance(cond, Tensor):
        raise TypeError(f"where: expected a Tensor, got {type(cond).__name__}")
    import numpy as np

    ops, device = cond._device.ops, cond._device
    values = ops.to_numpy(cond._data)
    found = np.nonzero(values.reshape(values.shape or (1,)))
    return tuple(Tensor._make(ops.from_numpy(f.astype(np.int64), device.index),
                              dtypes.int64, device) for f in found)


@public(top=True)
def where(condition: Tensor, input=_ALONE, other=_ALONE):  # noqa: A002  (PyTorch's names)
    """Elementwise ``input if condition else other`` (condition a bool tensor; input and
    other tensors or Python scalars). ``where(condition)`` alone is ``nonzero(condition,
    as_tuple=True)``."""
    cond, a, b = condition, input, other
    if a is _ALONE and b is _ALONE:
        return _positions(cond)
    if a is _ALONE or b is _ALONE:
        raise TypeError("where: give both input and other, or neither (where(condition) "
                        "lists the positions where condition is True)")
    if isinstance(cond, Tensor) and cond._dtype is dtypes.uint8:  # as PyTorch 2.13
        warn_user("where received a uint8 condition tensor: deprecated (as in PyTorch); "
                  "use a bool condition (cond.bool())")
        cond = nonzero_mask(cond)
    if isinstance(cond, Tensor) and not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a, b = _scalar_pair(a, b, cond)
    elif isinstance(a, bool) or isinstance(b, bool):  # where(m, x, True), as PyTorch
        a, b = python_bools(a, b)
    if not isinstance(cond, Tensor) or cond._dtype is not dtypes.bool_:
        given = (f"a {cond._dtype.name} tensor" if isinstance(cond, Tensor) else
                 type(cond).__name__)
        raise TypeError(f"where: cond must be a bool tensor (e.g. x > 0), got {given}")
    if not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise TypeError("where: a or b must be a Tensor")
        b, value = scalar_operand("where", b, a)
        a = as_tensor_like(value, b)
    if isinstance(b, Tensor):
        a, b = align("where", a, b)
        b_data, b_in = b._data, b
    else:  # a float scalar next to an integer tensor makes the result float32
        a, b_data = scalar_operand("where", a, b)
        b_in = None
    check_same_device("where", cond, a)
    shape = broadcast_shape("where", cond._data.shape, a._data.shape)
    if b_in is not None:
        broadcast_shape("where", shape, b_data.shape)
    out = Tensor._make(a._device.ops.where(cond._data, a._data, b_data), a._dtype, a._device)
    # cond among the inputs (it takes no gradient) so that the engine's check of saved
    # arrays sees the saved one is cond's: a or b may then be written in place afterwards
    # (x[x < 0] = 0 on a non-leaf), as PyTorch's where, which keeps only the condition
    return attach(out, "where", (cond, a, b_in), (cond._data,))


# ---------------------------------------------------------------- unary


def unary(op: str, x: Tensor, save_input=False, save_output=False) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x._dtype.is_floating and op not in ("neg", "abs", "sign", "relu"):
        x = astype(x, dtypes.get_default_dtype())  # exp of an int tensor: the default float
    out_data = getattr(x._device.ops, op)(x._data)
    out = _make(out_data, x._dtype, x._device)
    if not (x._requires_grad or switches.anomaly):
        return out
    saved = (x._data,) if save_input else ()
    if save_output:
        saved = saved + (out_data,)
    return attach(out, op, (x,), saved)


@public(method=True, top=True)
def neg(x):
    """-x, elementwise (not defined on bool tensors)."""
    _no_bool("neg", x)
    return unary("neg", x)


@public(method=True, top=True)
def exp(x):
    """e ** x, elementwise."""
    return unary("exp", x, save_output=True)


@public(method=True, top=True)
def log(x):
    """The natural logarithm of x, elementwise (-inf at 0, NaN below)."""
    return unary("log", x, save_input=True)


@public(method=True, top=True)
def sqrt(x):
    """The square root of x, elementwise (NaN below 0)."""
    return unary("sqrt", x, save_output=True)


@public(method=True, top=True)
def abs(x):
    """|x|, elementwise; its gradient at 0 is 0."""
    return unary("abs", x, save_input=True)


@public(method=True, top=True)
def sign(x):
    """-1, 0 or 1 by the sign of x, elementwise (0 at 0, and at NaN, as PyTorch)."""
    out = unary("sign", x)
    if not out._dtype.is_floating:
        return out
    return where(compare("equal", x, x), out, 0.0)


@public(method=True, top=True)
def erf(x):
    """The Gauss error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x."""
    return unary("erf", x, save_input=True)
