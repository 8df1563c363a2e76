"""More elementwise math: sin, cos, floor and what composes from them and the older
primitives (tan, log1p, expm1, log2, exp2, rsqrt, square, reciprocal, ceil, round, trunc,
clamp, isnan/isinf/isfinite), ``//`` and ``%``, and the bitwise operators."""

from __future__ import annotations

import math

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import no_grad
from fastnn.autograd.node_names import show_as
from fastnn.ops import elementwise as ew
from fastnn.ops import operands
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full

_INF = float("inf")
_SMALLEST_NORMAL = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38,
                    "float16": 6.103515625e-05}


def _float(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x._dtype.is_floating else x.to(dtypes.get_default_dtype())


@public(method=True, top=True)
def sin(x):
    """Sine, elementwise (radians)."""
    return ew.unary("sin", x, save_input=True)


@public(method=True, top=True)
def cos(x):
    """Cosine, elementwise (radians)."""
    return ew.unary("cos", x, save_input=True)


@public(method=True, top=True)
def tan(x):
    """Tangent: sin(x) / cos(x)."""
    x = _float("tan", x)
    return ew.div(sin(x), cos(x))


@public(method=True, top=True)
def floor(x):
    """The largest integer <= x; integer tensors are returned as they are (as PyTorch)."""
    if isinstance(x, Tensor) and not x._dtype.is_floating:
        return x
    return ew.unary("floor", x, save_input=False)


@public(method=True, top=True)
def ceil(x):
    """The smallest integer >= x; integer tensors are returned as they are."""
    if isinstance(x, Tensor) and not x._dtype.is_floating:
        return x
    return ew.neg(floor(ew.neg(x)))


@public(method=True, top=True)
def trunc(x):
    """x rounded toward zero; integer tensors are returned as they are."""
    if isinstance(x, Tensor) and not x._dtype.is_floating:
        return x
    return ew.where(ew.compare("less", x, 0), ceil(x), floor(x))


@public(method=True, top=True)
def round(x, decimals=0):
    """To the nearest integer, halves to even (as PyTorch and NumPy); ``decimals=d`` rounds
    x * 10**d instead and scales back (d < 0: x / 10**-d), as PyTorch."""
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    if decimals:
        if not (isinstance(x, Tensor) and x._dtype.is_floating):
            raise TypeError("round: decimals= is defined on floating tensors (as PyTorch)")
        if decimals > 0:
            return ew.div(round(ew.mul(x, 10.0**decimals)), 10.0**decimals)
        return ew.mul(round(ew.div(x, 10.0**-decimals)), 10.0**-decimals)
    if isinstance(x, Tensor) and not x._dtype.is_floating:
        return x
    low = floor(x)
    frac = ew.sub(x, low)  # exact: x and floor(x) are within one unit of each other
    half = ew.compare("equal", frac, 0.5)
    odd = ew.compare("equal", ew.sub(low, ew.mul(floor(ew.mul(low, 0.5)), 2.0)), 1.0)
    up = bitwise_or(ew.compare("greater", frac, 0.5), bitwise_and(half, odd))
    out = ew.add(low, up.to(x._dtype))
    # a zero result takes x's sign (-0.5 and -0.0 round to -0.0, as PyTorch and NumPy)
    return ew.where(ew.compare("equal", out, 0.0), ew.mul(x.detach(), 0.0), out)


@public(method=True, top=True)
def log1p(x):
    """log(1 + x), accurate for tiny x."""
    x = _float("log1p", x)
    # log(1 + u) through the composite's Kahan form; gradients flow through its primitives
    w = ew.add(x, 1.0)
    d = ew.sub(w, 1.0)
    exact = ew.compare("equal", d, 0.0)
    # NOTE: log(w) * (x / d), not (log(w) * x) / d, which overflows for x near the
    # dtype's max; x = inf has d = inf and is its own answer
    beyond = ew.compare("equal", x.detach(), _INF)
    plain = bitwise_or(exact, beyond)
    safe = ew.where(plain, 1.0, d)
    return ew.where(exact, x, ew.where(beyond, _INF, ew.mul(ew.log(w), ew.div(
        ew.where(plain, 1.0, x), safe))))


@public(method=True, top=True)
def expm1(x):
    """e**x - 1 to full precision near 0: (u - 1) * x / log(u) with u = e**x (Kahan)."""
    x = _float("expm1", x)
    u = ew.exp(x)
    d = ew.sub(u, 1.0)
    small = ew.compare("equal", d, 0.0)
    big = ew.compare("equal", d, -1.0)
    logu = ew.log(u)
    safe = ew.where(ew.compare("equal", logu, 0.0), ew.add(ew.mul(logu, 0.0), 1.0), logu)
    inf = ew.compare("equal", u, _INF)
    mid = ew.where(inf, u, ew.div(ew.mul(d, x), safe))
    return ew.where(small, x, ew.where(big, d, mid))


@public(method=True, top=True)
def log2(x):
    """Base-2 logarithm (exact at the powers of 2: log2(8.0) is 3.0)."""
    return exact_log(_float("log2", x), 2.0)


def exact_log(x: Tensor, base: float) -> Tensor:
    """log(x) / log(base), moved onto the integer n where base**n == x exactly (the
    division alone gives 2.9999999999999996 for log2(8)); the gradient stays log's."""
    y = ew.mul(ew.log(x), 1.0 / math.log(base))
    with no_grad():
        n = round(y)
        # 0, inf and the subnormals (too coarse to be a power exactly) are left as they are
        tiny = _SMALLEST_NORMAL.get(x._dtype.name, 1.1754943508222875e-38)
        exact = bitwise_and(ew.compare("equal", ew.pow(base, n), x),
                            bitwise_and(ew.compare("less", ew.abs(y), _INF),
                                        ew.compare("greater", x, tiny)))
        shift = ew.where(exact, ew.sub(n, y), 0.0)
    return ew.add(y, shift)


@public(method=True, top=True)
def exp2(x):
    """2 ** x (exact at the integers)."""
    return ew.pow(2.0, _float("exp2", x))


@public(method=True, top=True)
def rsqrt(x):
    """1 / sqrt(x) (-inf at -0.0, as PyTorch)."""
    return ew.div(1.0, ew.sqrt(_float("rsqrt", x)))


@public(method=True, top=True)
def square(x):
    """x * x (a bool x is squared as int64, as PyTorch)."""
    x = _numeric(x)
    return show_as(ew.mul(x, x), "PowBackward0", (x,))


@public(method=True, top=True)
def reciprocal(x):
    """1 / x."""
    x = _float("reciprocal", x)
    return ew.pow(x, -1.0)


@public(method=True, top=True, aliases=("clip",))
def clamp(x, min=None, max=None):
    """``x`` limited to [min, max] (either may be None, a number or a tensor); NaN stays
    NaN, and the gradient passes where min <= x <= max, as PyTorch."""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both")
    out = x
    for bound, beyond in ((min, "less"), (max, "greater")):
        if bound is None:
            continue
        past = ew.compare(beyond, out, bound)
        if isinstance(bound, Tensor) and bound._dtype.is_floating:  # a NaN bound gives NaN
            past = bitwise_or(past, ew.not_mask(ew.compare("equal", bound.detach(),
                                                            bound.detach())))
        out = ew.where(ew.not_mask(past), out, _like(bound, out))
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    return show_as(out, "ClampBackward0" if tensors else "ClampBackward1", (x,))


def _like(bound, x):
    return bound if isinstance(bound, Tensor) else (float(bound) if x._dtype.is_floating
                                                    else bound)


@public(method=True, top=True)
def isnan(x):
    """True where x is NaN."""
    if not x._dtype.is_floating:
        return full(x.shape, False, dtypes.bool_, x._device)
    return ew.not_mask(ew.compare("equal", x, x))


@public(method=True, top=True)
def isinf(x):
    """True where x is +inf or -inf."""
    if not x._dtype.is_floating:
        return full(x.shape, False, dtypes.bool_, x._device)
    return ew.compare("equal", ew.abs(x.detach()), _INF)


@public(method=True, top=True)
def isfinite(x):
    """True where x is neither NaN nor infinite."""
    if not x._dtype.is_floating:
        return full(x.shape, True, dtypes.bool_, x._device)
    return ew.compare("less", ew.abs(x.detach()), _INF)


# ---------------------------------------------------------------- // and %


@public(method=True, top=True, name="div")
def div_rounded(a, other, *, rounding_mode=None):
    """a / other, elementwise, broadcast: true division (integers give a float result), or
    rounded toward zero (``rounding_mode="trunc"``) or toward -inf (``"floor"``), in the
    operands' dtype, as PyTorch."""
    if rounding_mode is None:
        return ew.div(a, other)
    if rounding_mode == "floor":
        return floor_div(a, other)
    if rounding_mode != "trunc":
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    if _floating_pair(a, other):
        return trunc(ew.div(a, other))
    # integers, exactly: sign(a) sign(other) (|a| // |other|)
    q = floor_div(*(ew.abs(v) if isinstance(v, Tensor) else abs(v) for v in (a, other)))
    for v in (a, other):
        q = ew.mul(q, ew.sign(v) if isinstance(v, Tensor) else (v > 0) - (v < 0))
    return q


def _floating_pair(a, b) -> bool:
    a_t, b_t = (a, b) if isinstance(a, Tensor) else (b, a)
    return a_t._dtype.is_floating or (isinstance(b_t, Tensor) and b_t._dtype.is_floating) \
        or isinstance(a, float) or isinstance(b, float)


@public(method=("floor_divide", "__floordiv__"), top=True, name="floor_divide")
def floor_div(a, other):
    """a // other rounded toward -inf (floats: floor(a / other); integers: exact)."""
    if _floating_pair(a, other):
        return floor(ew.div(a, other))
    if all(v._dtype is dtypes.bool_ if isinstance(v, Tensor) else isinstance(v, bool)
           for v in (a, other)):  # NumPy's bool // bool is int8: a bool label on int8 data
        raise NotImplementedError("floor_divide: not implemented for two bools (as in "
                                  "PyTorch); convert one with .long()")
    _no_zero_divisor("floor_divide", other)
    return ew.binary("floor_divide", a, other)


def _no_zero_divisor(op: str, b) -> None:
    """Integer division by zero raises, as Python's and PyTorch's (NumPy gave 0 silently).
    A tensor divisor is read back once to look."""
    if isinstance(b, bool) or (not isinstance(b, Tensor) and b == 0):
        if not b:
            raise ZeroDivisionError(f"{op}: integer division by zero")
        return
    if isinstance(b, Tensor) and b.numel() and not bool(ew.compare("equal", b.detach(),
                                                                   0).logical_not().all()):
        raise ZeroDivisionError(f"{op}: integer division by zero (the divisor holds a 0)")


@public(method=("__rfloordiv__",), functional=False)
def rfloor_div(a, b):
    return floor_div(b, a)


@public(method=("remainder", "__mod__"), top=True)
def remainder(a, other):
    """a - other * (a // other): the sign of other, as Python's % and PyTorch's remainder.

    The gradient is PyTorch's: 1 for a, -(a // other) for other (the quotient is a step
    function, so it is computed without a gradient, which also keeps x % 0 from giving NaN
    to x).
    """
    a, other = _numeric(a, other), _numeric(other, a)
    quotient = floor_div(_constant(a), _constant(other))  # raises on an integer 0 divisor
    out = ew.sub(a, ew.mul(other, quotient) if isinstance(other, Tensor)
                 else ew.mul(quotient, other))
    if not out._dtype.is_floating:
        return out
    # an infinite other (where inf * 0 made NaN): PyTorch's fmod-then-adjust answer, a
    # itself, or other where a is nonzero and of the other sign
    if not isinstance(other, Tensor):
        if not math.isinf(other):
            return out
        other = full((), other, out._dtype, out._device)
    if not isinstance(a, Tensor):
        a = full((), a, out._dtype, out._device)
    a_c, b_c = a.detach(), other.detach()
    other_side = bitwise_and(bitwise_xor(ew.compare("less", b_c, 0), ew.compare("less", a_c, 0)),
                             bitwise_not(ew.compare("equal", a_c, 0)))
    infinite = bitwise_and(ew.compare("equal", ew.abs(b_c), _INF), isfinite(a_c))
    return ew.where(infinite, ew.where(other_side, other, a), out)


def _numeric(value, other=None):
    """A bool operand of % as the integer it is (bool % 1.5 is 1.0, as PyTorch's): of the
    other operand's integer dtype where it is an integer tensor (bool % int8 is int8)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Tensor) and value._dtype is dtypes.bool_:
        return value.to(bool_partner(other))
    return value


def bool_partner(other):
    """The integer dtype a bool tensor takes beside ``other``: an integer tensor's own,
    else int64 (PyTorch's promotion: bool with int8 is int8)."""
    if isinstance(other, Tensor) and other._dtype.is_integer:
        return other._dtype
    return dtypes.int64


def _constant(value):
    return value.detach() if isinstance(value, Tensor) else value


@public(method=("__rmod__",), functional=False)
def rremainder(a, b):
    return remainder(b, a)


# ---------------------------------------------------------------- bitwise


def _bitwise(op: str, a, b):
    for v in (a, b):
        if isinstance(v, Tensor) and v._dtype.is_floating:
            raise TypeError(f"{op}: defined on bool and integer tensors, not {v._dtype.name}")
        if isinstance(v, float):
            raise TypeError(f"{op}: defined on bools and integers, not the float {v!r}")
    if not isinstance(a, Tensor):
        a, b = b, a  # & | ^ commute
    if isinstance(b, bool):
        if a._dtype is dtypes.bool_:
            return Tensor._make(getattr(a._device.ops, op)(a._data, b), a._dtype, a._device)
        b = int(b)
    if isinstance(b, Tensor):
        a, b = operands.align(op, a, b)
        ew.broadcast_shape(op, a.shape, b.shape)
        data = getattr(a._device.ops, op)(a._data, b._data)
    else:
        if a._dtype is dtypes.bool_:
            a = a.to(dtypes.int64)
        data = getattr(a._device.ops, op)(a._data, wrap_int(op, int(b), a._dtype))
    return Tensor._make(data, a._dtype, a._device)


def wrap_int(op: str, value: int, dtype) -> int:
    """A Python int as the integer dtype's bits hold it (two's complement), as PyTorch takes
    the operand of a bitwise op: ``int32 | 0xFFFFFFFF`` is ``int32 | -1``, ``uint8 & -1`` is
    ``uint8 & 255``."""
    if not -2**63 <= value < 2**64:
        raise OverflowError(f"{op}: {value} does not fit in 64 bits (the widest integer a "
                            f"bitwise operand can be)")
    bits = 8 * dtype.itemsize
    if not dtype.is_signed:  # uint8 | -1 is uint8 | 255
        return value % 2**bits
    return (value + 2**(bits - 1)) % 2**bits - 2**(bits - 1)


@public(method=("bitwise_and", "__and__", "__rand__"), top=True)
def bitwise_and(a, other):
    """a & other on bool or integer tensors (a Python int or bool as other)."""
    return _bitwise("bitwise_and", a, other)


@public(method=("bitwise_or", "__or__", "__ror__"), top=True)
def bitwise_or(a, other):
    """a | other on bool or integer tensors."""
    return _bitwise("bitwise_or", a, other)


@public(method=("bitwise_xor", "__xor__", "__rxor__"), top=True)
def bitwise_xor(a, other):
    """a ^ other on bool or integer tensors."""
    return _bitwise("bitwise_xor", a, other)


@public(method=("bitwise_not", "__invert__"), top=True)
def bitwise_not(x):
    """~x: logical not on bool tensors, -x - 1 on integers."""
    if x._dtype is dtypes.bool_:
        return ew.not_mask(x)
    if x._dtype.is_floating:
        raise TypeError(f"bitwise_not: defined on bool and integer tensors, not "
                        f"{x._dtype.name}")
    return ew.sub(ew.neg(x), 1)
