"""Inverse trigonometric and hyperbolic functions, each a composite of the elementwise
primitives (gradients from theirs), and the helpers the special functions share (erfc,
erfinv, lgamma and digamma are :mod:`fastnn.ops.special_gamma`).

Branches are chosen with ``where``; every branch not taken is fed a harmless stand-in input,
so that its backward (a zero gradient times its local derivative) never makes 0 * inf = NaN.
Integer and bool inputs give the default float dtype, as PyTorch. float16 and bfloat16 are
computed in float32 and rounded once; the series-based functions (erfc, erfinv, lgamma,
digamma) run float32 in float64 where the device has it.
"""

from __future__ import annotations

import math

from fastnn.api import dtypes
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, operands
from fastnn.ops.core import astype
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full

_PI = math.pi
_LN2 = math.log(2.0)
_TAN_PI_8 = math.tan(math.pi / 8)
_HUGE = 2.0**28  # beyond it sqrt(1 + x*x) == |x| to double precision
where = ew.where


def lift(op: str, x, precise: bool = False) -> tuple[Tensor, object]:
    """(x in the dtype to compute in, the dtype of the result)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    out = x._dtype if x._dtype.is_floating else dtypes.get_default_dtype()
    work = out if out.itemsize >= 4 else dtypes.float32
    if precise and work is dtypes.float32 and _has_float64(x):
        work = dtypes.float64
    return astype(x, work), out


def _has_float64(x: Tensor) -> bool:
    supported = x._device.backend.record.dtypes
    return not supported or "float64" in supported


def done(result: Tensor, out) -> Tensor:
    return astype(result, out)


def const(like: Tensor, value: float) -> Tensor:
    """A tensor shaped like ``like`` holding ``value`` (no gradient)."""
    return full(like.shape, value, like._dtype, like._device)


def pick(cond: Tensor, a: float, b: float, like: Tensor) -> Tensor:
    """``a`` where cond else ``b``, shaped as the broadcast of cond and ``like``."""
    return where(cond, a, const(like, b))


def signbit_of(x: Tensor) -> Tensor:
    """True where x < 0 or x is -0.0 (floating x)."""
    x = x.detach()
    with_zero = ew.compare("equal", x, 0.0)
    negative_zero = ew.compare("less", ew.div(1.0, where(with_zero, x, 1.0)), 0.0)
    return mathops.bitwise_or(ew.compare("less", x, 0.0),
                              mathops.bitwise_and(with_zero, negative_zero))


def not_nan(x: Tensor) -> Tensor:
    """True where x is a number (not NaN), without a gradient."""
    return ew.compare("equal", x.detach(), x.detach())


# ---------------------------------------------------------------- atan family


def _atan_core(t: Tensor) -> Tensor:
    """atan(t) for t in [-1, 1]: |t| > tan(pi/8) is moved to (t-1)/(t+1) (+pi/4), one
    half-angle step brings it under 0.2, and 13 terms of the series finish it."""
    a = ew.abs(t.detach())
    mid = ew.compare("greater", a, _TAN_PI_8)
    a_mid = ew.abs(where(mid, t, 0.5))
    w = where(mid, ew.div(ew.sub(a_mid, 1.0), ew.add(a_mid, 1.0)), t)
    v = ew.div(w, ew.add(ew.sqrt(ew.add(ew.mul(w, w), 1.0)), 1.0))
    z = ew.mul(v, v)
    series = ew.add(ew.mul(z, (-1) ** 12 / 25.0), (-1) ** 11 / 23.0)
    for k in range(10, -1, -1):
        series = ew.add(ew.mul(series, z), (-1) ** k / (2 * k + 1.0))
    r = ew.mul(ew.mul(v, series), 2.0)
    shifted = ew.add(r, _PI / 4)
    return where(mid, where(ew.compare("less", t.detach(), 0.0), ew.neg(shifted), shifted), r)


@public(method=True, top=True, aliases=("arctan",))
def atan(x):
    """The inverse tangent, in (-pi/2, pi/2)."""
    x, out = lift("atan", x)
    big = ew.compare("greater", ew.abs(x.detach()), 1.0)
    t = where(big, ew.div(1.0, where(big, x, 1.0)), x)
    r = _atan_core(t)
    outer = ew.sub(pick(ew.compare("less", x.detach(), 0.0), -_PI / 2, _PI / 2, r), r)
    return done(where(big, outer, r), out)


def pair(op: str, a, b) -> tuple[Tensor, Tensor, object]:
    """Two operands promoted as PyTorch's binary float ops (a Python number takes the
    tensor's dtype), lifted to a floating dtype to compute in; and the result's dtype."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected a Tensor operand, got {type(a).__name__}")
    if not isinstance(a, Tensor):
        b, value = operands.scalar_operand(op, b, a)
        a = operands.as_tensor_like(value, b)
    elif not isinstance(b, Tensor):
        a, value = operands.scalar_operand(op, a, b)
        b = operands.as_tensor_like(value, a)
    a, b = operands.align(op, a, b)
    ew.broadcast_shape(op, a.shape, b.shape)
    a, out = lift(op, a)
    return a, astype(b, a._dtype), out


@public(method=True, top=True, aliases=("arctan2",))
def atan2(input, other):
    """The angle of the point (other, input) from the x axis, in [-pi, pi] (signed zeros
    pick the side, as C's atan2)."""
    y, x, out = pair("atan2", input, other)
    ay, ax = ew.abs(y.detach()), ew.abs(x.detach())
    both_inf = mathops.bitwise_and(ew.compare("equal", ay, math.inf),
                                   ew.compare("equal", ax, math.inf))
    swap = ew.compare("greater", ay, ax)
    finite = mathops.bitwise_not(both_inf)
    ok_plain = mathops.bitwise_and(mathops.bitwise_and(mathops.bitwise_not(swap), finite),
                                   ew.compare("greater", ax, 0.0))
    ok_swap = mathops.bitwise_and(swap, finite)
    # y * 0 keeps the sign of a zero y where x is zero too: atan2(-0.0, 0.0) is -0.0
    plain = ew.div(where(ok_plain, y, ew.mul(y, 0.0)), where(ok_plain, x, 1.0))
    swapped = ew.div(where(ok_swap, x, 0.0), where(ok_swap, y, 1.0))
    t = where(swap, swapped, plain)
    signs = ew.mul(ew.sign(y.detach()), ew.sign(x.detach()))
    t = where(both_inf, signs, t)
    base = _atan_core(t)
    y_neg, x_neg = signbit_of(y), signbit_of(x)
    vertical = ew.sub(pick(y_neg, -_PI / 2, _PI / 2, base), base)
    flipped = ew.add(base, pick(y_neg, -_PI, _PI, base))
    angle = where(swap, vertical, where(x_neg, flipped, base))
    numbers = mathops.bitwise_and(not_nan(x), not_nan(y))
    return done(where(numbers, angle, ew.add(x.detach(), y.detach())), out)


def _root_one_minus_square(x: Tensor) -> Tensor:
    return ew.sqrt(ew.mul(ew.sub(1.0, x), ew.add(x, 1.0)))


@public(method=True, top=True, aliases=("arcsin",))
def asin(x):
    """The inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1])."""
    x, out = lift("asin", x)
    return done(atan2(x, _root_one_minus_square(x)), out)


@public(method=True, top=True, aliases=("arccos",))
def acos(x):
    """The inverse cosine, in [0, pi] (NaN outside [-1, 1])."""
    x, out = lift("acos", x)
    return done(atan2(_root_one_minus_square(x), x), out)


# ---------------------------------------------------------------- hyperbolic


@public(method=True, top=True)
def sinh(x):
    """(e**x - e**-x) / 2, as (expm1(x) - expm1(-x)) / 2: no cancellation near 0."""
    x, out = lift("sinh", x)
    return done(ew.mul(ew.sub(mathops.expm1(x), mathops.expm1(ew.neg(x))), 0.5), out)


@public(method=True, top=True)
def cosh(x):
    """(e**x + e**-x) / 2, as c + 1/(4c) with c = e**(|x| - log 2) (finite up to the
    dtype's largest cosh)."""
    x, out = lift("cosh", x)
    half = ew.exp(ew.sub(where(ew.compare("less", x.detach(), 0.0), ew.neg(x), x), _LN2))
    return done(ew.add(half, ew.div(0.25, half)), out)


def _asinh_positive(a: Tensor) -> Tensor:
    """asinh(a) = log1p(a + a*a / (1 + sqrt(1 + a*a))), exact also for negative a of
    modest size."""
    square = ew.mul(a, a)
    return mathops.log1p(ew.add(a, ew.div(square, ew.add(ew.sqrt(ew.add(square, 1.0)), 1.0))))


@public(method=True, top=True, aliases=("arcsinh",))
def asinh(x):
    """The inverse hyperbolic sine."""
    x, out = lift("asinh", x)
    a = ew.abs(x.detach())
    small = ew.compare("less", a, 1.0)
    huge = ew.compare("greater", a, _HUGE)
    negative = ew.compare("less", x.detach(), 0.0)
    near = _asinh_positive(where(small, x, 0.0))
    mag = where(negative, ew.neg(x), x)  # |x| without abs's kink (0 is in the near branch)
    middle = _asinh_positive(where(mathops.bitwise_or(small, huge), 1.0, mag))
    top = ew.add(ew.log(where(huge, mag, 1.0)), _LN2)
    magnitude = where(huge, top, middle)
    return done(where(small, near, where(negative, ew.neg(magnitude), magnitude)), out)


@public(method=True, top=True, aliases=("arccosh",))
def acosh(x):
    """The inverse hyperbolic cosine, for x >= 1 (NaN below)."""
    x, out = lift("acosh", x)
    huge = ew.compare("greater", x.detach(), _HUGE)
    t = ew.sub(where(huge, 2.0, x), 1.0)
    near = mathops.log1p(ew.add(t, ew.sqrt(ew.add(ew.mul(t, t), ew.mul(t, 2.0)))))
    top = ew.add(ew.log(where(huge, x, 2.0)), _LN2)
    return done(where(huge, top, near), out)


@public(method=True, top=True, aliases=("arctanh",))
def atanh(x):
    """The inverse hyperbolic tangent, 0.5 * log1p(2x / (1 - x)), on (-1, 1) (+-inf at
    +-1, NaN beyond)."""
    x, out = lift("atanh", x)
    small = ew.compare("less", ew.abs(x.detach()), 0.5)
    negative = ew.compare("less", x.detach(), 0.0)

    def half_log(v):
        return ew.mul(mathops.log1p(ew.div(ew.mul(v, 2.0), ew.sub(1.0, v))), 0.5)

    near = half_log(where(small, x, 0.0))
    far = half_log(where(small, 0.75, where(negative, ew.neg(x), x)))
    return done(where(small, near, where(negative, ew.neg(far), far)), out)
