"""More elementwise ops as PyTorch has them, each a composite of the primitives: log10,
logaddexp(2), copysign, fmod, hypot, frac, fix, sgn, signbit, nan_to_num, isclose,
allclose, equal, isposinf/isneginf, fmax/fmin, xlogy, sinc, deg2rad/rad2deg, float_power,
frexp, and the bit shifts (``<<``, ``>>``)."""

from __future__ import annotations

import math
import numbers

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, operands
from fastnn.ops.core import astype
from fastnn.ops.special import done, lift, pair, pick, signbit_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full

where = ew.where
_LN2 = math.log(2.0)


def _tensor(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def _not(cond: Tensor) -> Tensor:
    return mathops.bitwise_not(cond)


def _zero_link(x: Tensor) -> Tensor:
    """+0.0 in x's shape, tied to x with a zero gradient: subtracted from a result, it
    makes x an input whose gradient is 0 (PyTorch's for copysign's other, angle's x)."""
    return where(full(x.shape, False, dtypes.bool_, x._device), x, 0.0)


def _isnan(x: Tensor) -> Tensor:
    return _not(ew.compare("equal", x.detach(), x.detach()))


@public(method=True, top=True)
def log10(x):
    """Base-10 logarithm (exact at the powers of 10 a float holds exactly)."""
    x, out = lift("log10", x)
    return done(mathops.exact_log(x, 10.0), out)


@public(method=True, top=True)
def angle(x):
    """The argument of real x: pi where x < 0, else 0 (-0.0 too), NaN at NaN; integers give
    the default float dtype. Its gradient is 0, as PyTorch's for real input."""
    x, out = lift("angle", x)
    detached = x.detach()
    arg = where(_isnan(detached), detached,
                pick(ew.compare("less", detached, 0.0), math.pi, 0.0, detached))
    return done(ew.sub(arg, _zero_link(x)), out)  # (still requires grad, as PyTorch's)


@public(method=True, top=True)
def logaddexp(input, other):
    """log(exp(a) + exp(b)) without overflow: max(a, b) + log1p(exp(-|a - b|)); equal
    infinities give themselves."""
    a, b, out = pair("logaddexp", input, other)
    same = ew.compare("equal", a.detach(), b.detach())
    gap = ew.abs(ew.sub(where(same, 0.0, a), where(same, 0.0, b)))
    return done(ew.add(ew.maximum(a, b), mathops.log1p(ew.exp(ew.neg(gap)))), out)


@public(method=True, top=True)
def logaddexp2(input, other):
    """log2(2**a + 2**b), without overflow."""
    a, b, out = pair("logaddexp2", input, other)
    return done(ew.mul(logaddexp(ew.mul(a, _LN2), ew.mul(b, _LN2)), 1.0 / _LN2), out)


@public(method=True, top=True)
def signbit(x):
    """True where the sign bit of x is set: x < 0, and -0.0 (a bool tensor)."""
    x = _tensor("signbit", x)
    if not x._dtype.is_floating:
        return ew.compare("less", x, 0)
    return signbit_of(x)


@public(method=True, top=True)
def copysign(input, other):
    """|input| with the sign of other (-0.0 counts as negative); a float result."""
    a, b, out = pair("copysign", input, other)
    negative = signbit(b)
    magnitude = where(signbit_of(a), ew.neg(a), a)  # |a| whose gradient is sign(a), -0 too
    result = where(negative, ew.neg(magnitude), magnitude)
    if a._dtype.is_floating and a.requires_grad:  # at a = 0, PyTorch's gradient is 0
        result = where(ew.compare("equal", a.detach(), 0.0), result.detach(), result)
    # other gets a zero gradient, as PyTorch's (x - 0.0 keeps the sign of a zero x)
    return done(ew.sub(result, _zero_link(b)), out)


@public(method=True, top=True)
def fmod(input, other):
    """C's fmod: input - other * trunc(input / other), with the sign of input (Python's %
    and :func:`remainder` take the sign of other); x itself where other is infinite.

    NOTE: on floats the quotient is rounded before it is truncated, so for
    |input / other| beyond 2**24 (float32) the result is no longer C's exact fmod."""
    a = _tensor("fmod", input)
    if isinstance(other, Tensor) and other._dtype.is_floating or a._dtype.is_floating or \
            isinstance(other, float):
        a, b, out = pair("fmod", a, other)
        quotient = mathops.trunc(ew.div(a.detach(), b.detach()))
        r = ew.sub(a, ew.mul(b, quotient))
        infinite = mathops.bitwise_and(mathops.isinf(b), mathops.isfinite(a))
        return done(where(infinite, a, r), out)
    r = mathops.remainder(a, other)  # integers: exact, then moved to the sign of input
    r_neg = ew.compare("less", r.detach(), 0)
    nonzero = _not(ew.compare("equal", r.detach(), 0))
    flip = mathops.bitwise_and(nonzero, mathops.bitwise_xor(r_neg, ew.compare("less", a, 0)))
    return where(flip, ew.sub(r, other), r)


@public(method=True, top=True)
def hypot(input, other):
    """sqrt(a*a + b*b) without overflow or underflow: m * sqrt(1 + (n/m)**2), m the larger
    magnitude; inf if either is infinite (even beside NaN), as C's hypot."""
    a, b, out = pair("hypot", input, other)
    a_is_big = ew.compare("less", ew.abs(b.detach()), ew.abs(a.detach()))
    big = ew.abs(where(a_is_big, a, b))
    small = ew.abs(where(a_is_big, b, a))
    usable = mathops.bitwise_and(ew.compare("greater", big.detach(), 0.0),
                                 ew.compare("less", big.detach(), math.inf))
    ratio = ew.div(where(usable, small, 0.0), where(usable, big, 1.0))
    result = ew.mul(big, ew.sqrt(ew.add(ew.mul(ratio, ratio), 1.0)))
    result = where(mathops.bitwise_or(_isnan(a), _isnan(b)), ew.add(a.detach(), b.detach()),
                   result)
    infinite = mathops.bitwise_or(mathops.isinf(a), mathops.isinf(b))
    return done(where(infinite, math.inf, result), out)


@public(method=True, top=True)
def frac(x):
    """x - trunc(x): the fractional part, with the sign of x (NaN at +-inf)."""
    x = _tensor("frac", x)
    if not x._dtype.is_floating:
        raise TypeError(f"frac: defined on floating tensors, not {x._dtype.name} (as PyTorch)")
    return ew.sub(x, mathops.trunc(x.detach()))


@public(method=True, top=True)
def fix(x):
    """The same as :func:`trunc` (PyTorch's alias)."""
    return mathops.trunc(x)


@public(method=True, top=True)
def sgn(x):
    """The sign of x, as :func:`sign` (the same for real tensors in PyTorch)."""
    return ew.sign(x)


@public(method=True, top=True)
def isposinf(x):
    """True where x is +inf."""
    x = _tensor("isposinf", x)
    if not x._dtype.is_floating:
        return full(x.shape, False, dtypes.bool_, x._device)
    return ew.compare("equal", x.detach(), math.inf)


@public(method=True, top=True)
def isneginf(x):
    """True where x is -inf."""
    x = _tensor("isneginf", x)
    if not x._dtype.is_floating:
        return full(x.shape, False, dtypes.bool_, x._device)
    return ew.compare("equal", x.detach(), -math.inf)


@public(method=True, top=True)
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: 0, the
    dtype's largest and most negative finite values); integer tensors are returned as they
    are."""
    x = _tensor("nan_to_num", x)
    if not x._dtype.is_floating:
        return x
    largest = _largest(x._dtype)
    posinf = largest if posinf is None else float(posinf)
    neginf = -largest if neginf is None else float(neginf)
    out = where(_isnan(x), float(nan), x)
    out = where(ew.compare("equal", x.detach(), math.inf), posinf, out)
    return where(ew.compare("equal", x.detach(), -math.inf), neginf, out)


def _largest(dtype) -> float:
    import numpy as np

    if dtype.name == "bfloat16":
        return 3.3895313892515355e38
    return float(np.finfo(dtype.name).max)


@public(method=True, top=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (equal infinities are close;
    NaN is close to NaN only with ``equal_nan``)."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
            raise ValueError(f"isclose: {name} must be a real number >= 0, got {value!r}")
    a, b = _tensor("isclose", input), other
    if isinstance(b, Tensor):
        a, b = operands.align("isclose", a.detach(), b.detach())
    if not a._dtype.is_floating or (isinstance(b, Tensor) and not b._dtype.is_floating):
        if a._dtype is dtypes.bool_:
            a = astype(a, dtypes.int64)
        if isinstance(b, Tensor) and b._dtype is dtypes.bool_:
            b = astype(b, dtypes.int64)
        if rtol == 0 and atol == 0:
            return ew.compare("equal", a, b)
        a = astype(a, dtypes.float64 if _wide(a) else dtypes.float32)
        b = astype(b, a._dtype) if isinstance(b, Tensor) else b
    equal = ew.compare("equal", a, b)
    gap = ew.abs(ew.sub(a, b))
    bound = ew.add(ew.mul(ew.abs(b) if isinstance(b, Tensor) else abs(b), float(rtol)),
                   float(atol))
    close = mathops.bitwise_or(equal, mathops.bitwise_and(
        _not(ew.compare("greater", gap, bound)), mathops.isfinite(gap)))
    if equal_nan:
        b_nan = _isnan(b) if isinstance(b, Tensor) else (b != b)
        close = mathops.bitwise_or(close, mathops.bitwise_and(_isnan(a), b_nan))
    return close


def _wide(x: Tensor) -> bool:
    supported = x._device.backend.record.dtypes
    return not supported or "float64" in supported


@public(method=True, top=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of :func:`isclose` is True (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@public(method=True, top=True)
def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values (a Python bool; NaN is
    never equal)."""
    a, b = _tensor("equal", input), _tensor("equal", other)
    if a.shape != b.shape:
        return False
    return bool(ew.compare("equal", *operands.align("equal", a.detach(), b.detach())).all().item())


def _nan_aware(op: str, input, other, beyond: str):
    """fmax (``beyond`` "greater") or fmin ("less"): input where it is beyond other or equal
    to it, or other is NaN; else other. The choice is a where(), so the gradient goes to
    the operand chosen, ties to input, as PyTorch's."""
    a, b = _tensor(op, input), other
    if isinstance(b, Tensor):
        a, b = operands.align(op, a, b)
    if not a._dtype.is_floating:  # (floats skip this pass: only its dtype would be read)
        out = (ew.maximum if beyond == "greater" else ew.minimum)(a, b)
        if not out._dtype.is_floating:
            return out
    if not isinstance(b, Tensor):
        if math.isnan(b):
            return a
        if not a._dtype.is_floating:  # (an integer tensor against a float)
            a = astype(a, out._dtype)
    keep = mathops.bitwise_or(ew.compare(beyond, a, b), ew.compare("equal", a, b))
    if isinstance(b, Tensor):
        keep = mathops.bitwise_or(keep, _isnan(b))
    return where(keep, a, b)


@public(method=True, top=True)
def fmax(input, other):
    """The elementwise maximum that ignores NaN (NaN only where both are NaN); the gradient
    goes to input where input >= other (ties included) or other is NaN, else to other, as
    PyTorch's."""
    return _nan_aware("fmax", _tensor("fmax", input), other, "greater")


@public(method=True, top=True)
def fmin(input, other):
    """The elementwise minimum that ignores NaN (NaN only where both are NaN); the gradient
    goes to input where input <= other (ties included) or other is NaN, else to other, as
    PyTorch's."""
    return _nan_aware("fmin", _tensor("fmin", input), other, "less")


@public(method=True, top=True)
def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN), as scipy and PyTorch."""
    return times_log("xlogy", input, other, ew.log, 0.0, 1.0)


def times_log(op: str, input, other, log, edge: float, finite_at: float):
    """input * log(other) for a logarithm ``log`` finite above ``edge``, 0 where input is
    0 (unless other is NaN): at x = 0 a y whose log is not finite (at or below ``edge``,
    or inf) is replaced by ``finite_at`` (whose log is 0), so the result is 0 and x still
    gets log(y) as its gradient where that is finite, as PyTorch."""
    x, y, out = pair(op, input, other)
    y_c = y.detach()
    bad_log = mathops.bitwise_or(_not(ew.compare("greater", y_c, edge)),
                                 ew.compare("equal", y_c, math.inf))
    zero = mathops.bitwise_and(ew.compare("equal", x.detach(), 0.0),
                               mathops.bitwise_and(bad_log, _not(_isnan(y))))
    return done(ew.mul(x, log(where(zero, finite_at, y))), out)


@public(method=True, top=True)
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0."""
    x, out = lift("sinc", x)
    zero = ew.compare("equal", x.detach(), 0.0)
    angle = ew.mul(where(zero, 1.0, x), math.pi)
    value = ew.div(mathops.sin(angle), angle)
    # at 0 the value 1 with sinc's derivatives there (0, -pi**2/3): 1 - (pi x)**2 / 6
    near = ew.sub(1.0, ew.mul(ew.mul(ew.mul(x, x), math.pi**2), 1.0 / 6))
    return done(where(zero, near, value), out)


@public(method=True, top=True)
def deg2rad(x):
    """Degrees to radians (x * pi / 180)."""
    x, out = lift("deg2rad", x)
    return done(ew.mul(x, math.pi / 180), out)


@public(method=True, top=True)
def rad2deg(x):
    """Radians to degrees (x * 180 / pi)."""
    x, out = lift("rad2deg", x)
    return done(ew.mul(x, 180 / math.pi), out)


@public(method=True, top=True)
def float_power(input, exponent):
    """input ** exponent computed in float64 (a float64 result, as PyTorch)."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power: expected a Tensor operand")
    a = astype(input, dtypes.float64) if isinstance(input, Tensor) else float(input)
    b = astype(exponent, dtypes.float64) if isinstance(exponent, Tensor) else float(exponent)
    return ew.pow(a, b)


@public(method=True, top=True, functional=False)
def frexp(input):  # noqa: A002
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1)
    and an int32 exponent (0 and both for 0, inf and NaN), as ``math.frexp``; the
    mantissa's gradient is grad / 2 ** exponent, as PyTorch's."""
    from fastnn import return_types

    x = _tensor("frexp", input)
    if not x.dtype.is_floating:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got "
                           f"{x.dtype.name}")
    with no_grad():
        size = ew.abs(x)
        regular = mathops.bitwise_and(size > 0.0, mathops.isfinite(x))
        safe = where(regular, size, 1.0)
        exponent = ew.add(mathops.floor(mathops.log2(safe)), 1.0)
        for _ in range(2):  # log2 may round across a power of two: one step either way
            scaled = _scale(safe, exponent)
            exponent = where(scaled >= 1.0, ew.add(exponent, 1.0),
                             where(scaled < 0.5, ew.sub(exponent, 1.0), exponent))
        exponent = where(regular, exponent, 0.0)
    mantissa = _scale(x, exponent)
    return return_types.frexp(mantissa, astype(exponent, dtypes.int32))


def _scale(x: Tensor, exponent: Tensor) -> Tensor:
    """x * 2 ** -exponent in two factors, so that neither over- nor underflows where the
    product does not (a subnormal x has an exponent down to -148 in float32)."""
    half = mathops.floor(ew.div(exponent, 2.0))
    return ew.mul(ew.mul(x, mathops.exp2(ew.neg(half))), mathops.exp2(ew.sub(half, exponent)))
