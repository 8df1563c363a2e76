"""erfc, erfinv, lgamma and digamma, composites of the elementwise primitives (gradients
from theirs), with :mod:`fastnn.ops.special`'s conventions: branches chosen with
``where`` on harmless stand-ins, integer inputs as the default float dtype, float32 run in
float64 where the device has it (these are series and continued fractions)."""

from __future__ import annotations

import math

from fastnn.autograd.grad_mode import no_grad
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops
from fastnn.ops.special import done, lift, pick, signbit_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_PI = math.pi
_LN2 = math.log(2.0)
where = ew.where


def erfc_fraction(x: Tensor) -> Tensor:
    """Laplace's continued fraction x + (1/2) / (x + 1 / (x + (3/2) / ...)), 32 levels
    deep: erfc(x) = exp(-x*x) / (sqrt(pi) * this), to double precision for x >= 2.5."""
    fraction = x
    for k in range(32, 0, -1):
        fraction = ew.add(x, ew.div(k / 2.0, fraction))
    return fraction


def _erfc_tail(x: Tensor) -> Tensor:
    """erfc(x) for x >= 2.5 (:func:`erfc_fraction`)."""
    return ew.div(ew.exp(ew.neg(ew.mul(x, x))), ew.mul(erfc_fraction(x), math.sqrt(math.pi)))


def _erfc_value(x: Tensor) -> Tensor:
    tail = ew.compare("greater", x, 2.5)
    return where(tail, _erfc_tail(where(tail, x, 3.0)), ew.sub(1.0, ew.erf(x)))


@public(method=True, top=True)
def erfc(x):
    """1 - erf(x), to full relative precision also where it is tiny (x >= 2.5 through a
    continued fraction); its derivatives are -erf's."""
    x, out = lift("erfc", x, precise=True)
    with no_grad():
        value = _erfc_value(x)
    # the value above, with the derivatives of -erf(x) (the same as erfc's, every order)
    slope = ew.neg(ew.erf(x))
    return done(ew.add(value, ew.sub(slope, slope.detach())), out)


def _erfinv_guess(y: Tensor) -> Tensor:
    """Giles' single-precision erfinv (a polynomial in w = -log(1 - y*y))."""
    w = ew.neg(ew.log(ew.mul(ew.sub(1.0, y), ew.add(y, 1.0))))
    central = ew.compare("less", w, 5.0)
    low = ew.sub(where(central, w, 2.5), 2.5)
    high = ew.sub(ew.sqrt(where(central, 9.0, w)), 3.0)
    p_low = _horner(low, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                          0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                          1.50140941))
    p_high = _horner(high, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                            0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                            2.83297682))
    # beyond w = 16 (|y| > 1 - 1e-7): erfc(v) ~ exp(-v*v) / (v sqrt(pi)), solved by iteration
    far = ew.compare("greater", w, 16.0)
    s = ew.add(where(far, w, 17.0), _LN2)
    v = ew.sqrt(s)
    for _ in range(3):
        v = ew.sqrt(ew.sub(s, ew.log(ew.mul(v, math.sqrt(math.pi)))))
    return where(far, ew.mul(v, ew.sign(y)), ew.mul(where(central, p_low, p_high), y))


def _horner(t: Tensor, coefficients) -> Tensor:
    acc = ew.add(ew.mul(t, coefficients[0]), coefficients[1])
    for c in coefficients[2:]:
        acc = ew.add(ew.mul(acc, t), c)
    return acc


@public(method=True, top=True)
def erfinv(x):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside): Giles' approximation
    (an asymptotic guess in the far tails) polished by two Halley steps.

    NOTE: its first derivative sqrt(pi)/2 * exp(erfinv(x)**2) is exact; higher derivatives
    through it are not taken (they come out 0)."""
    y, out = lift("erfinv", x, precise=True)
    with no_grad():
        inside = ew.compare("less", ew.abs(y), 1.0)
        y_in = where(inside, y, 0.0)
        v = _erfinv_guess(y_in)
        a = ew.abs(y_in)
        near_one = ew.compare("greater", a, 0.5)
        sign = ew.sign(y_in)
        for _ in range(2):
            # near +-1, erf(v) - y as (1 - |y|) - erfc(|v|): both terms exact to the last bit
            tail = ew.mul(ew.sub(ew.sub(1.0, a), _erfc_value(ew.abs(v))), sign)
            error = where(near_one, tail, ew.sub(ew.erf(v), y_in))
            residual = ew.div(error,
                              ew.mul(ew.exp(ew.neg(ew.mul(v, v))), 2.0 / math.sqrt(math.pi)))
            v = ew.sub(v, ew.div(residual, ew.add(ew.mul(v, residual), 1.0)))
        edge = ew.compare("equal", ew.abs(y), 1.0)
        v = where(inside, v, where(edge, ew.mul(y, math.inf), ew.mul(y, math.nan)))
        slope = ew.mul(ew.exp(ew.mul(v, v)), math.sqrt(math.pi) / 2)
        slope = where(inside, slope, 0.0)
    return done(ew.add(v, ew.mul(ew.sub(y, y.detach()), slope)), out)


def _stirling(z: Tensor) -> Tensor:
    """lgamma(z) for z >= 10: Stirling's series to the z**-13 term."""
    r = ew.div(1.0, z)
    r2 = ew.mul(r, r)
    series = _horner(r2, (1.0 / 156, -691.0 / 360360, 1.0 / 1188, -1.0 / 1680, 1.0 / 1260,
                          -1.0 / 360, 1.0 / 12))
    main = ew.sub(ew.mul(ew.sub(z, 0.5), ew.log(z)), z)
    return ew.add(ew.add(main, 0.5 * math.log(2 * math.pi)), ew.mul(series, r))


def _psi_asymptotic(z: Tensor) -> Tensor:
    """digamma(z) for z >= 10: log z - 1/(2z) - the Bernoulli series to z**-14."""
    r = ew.div(1.0, z)
    r2 = ew.mul(r, r)
    series = _horner(r2, (1.0 / 12, -691.0 / 32760, 1.0 / 132, -1.0 / 240, 1.0 / 252,
                          -1.0 / 120, 1.0 / 12))
    return ew.sub(ew.sub(ew.log(z), ew.mul(r, 0.5)), ew.mul(series, r2))


def _reflected(op: str, x):
    """(x, out dtype, x < 1/2, max(x, 1 - x) >= 1/2, the part of x within 1/2 of an
    integer, for the x < 1/2 side): the pieces of the reflection formulas."""
    x, out = lift(op, x, precise=True)
    refl = ew.compare("less", x.detach(), 0.5)
    xr = where(refl, ew.sub(1.0, x), x)
    x_left = where(refl, x, 0.25)
    offset = mathops.floor(ew.add(x_left.detach(), 0.5))
    return x, out, refl, xr, ew.sub(x_left, offset)


@public(method=True, top=True)
def lgamma(x):
    """log |Gamma(x)|: Stirling's series above 10, the recurrence below, the reflection
    formula under 1/2 (+inf at 0 and the negative integers)."""
    x, out, refl, xr, frac = _reflected("lgamma", x)
    small = ew.compare("less", xr.detach(), 10.0)
    xs = where(small, xr, 1.0)
    product = xs
    for k in range(1, 10):
        product = ew.mul(product, ew.add(xs, float(k)))
    right = ew.sub(_stirling(where(small, ew.add(xr, 10.0), xr)),
                   where(small, ew.log(product), 0.0))
    right = where(ew.compare("equal", xr.detach(), math.inf), math.inf, right)
    sine = ew.abs(mathops.sin(ew.mul(frac, _PI)))
    left = ew.sub(ew.sub(math.log(_PI), ew.log(sine)), right)
    result = where(refl, left, right)
    plain = x.detach()
    pole = mathops.bitwise_and(ew.compare("less", plain, 0.5),
                               ew.compare("equal", mathops.floor(plain), plain))
    return done(where(pole, math.inf, result), out)


@public(method=True, top=True)
def digamma(x):
    """The logarithmic derivative of Gamma: the asymptotic series above 10, the recurrence
    below, the reflection formula under 1/2 (-inf at 0, +inf at -0.0, NaN at the negative
    integers, as PyTorch)."""
    x, out, refl, xr, frac = _reflected("digamma", x)
    small = ew.compare("less", xr.detach(), 10.0)
    xs = where(small, xr, 1.0)
    steps = ew.div(1.0, xs)
    for k in range(1, 10):
        steps = ew.add(steps, ew.div(1.0, ew.add(xs, float(k))))
    right = ew.sub(_psi_asymptotic(where(small, ew.add(xr, 10.0), xr)),
                   where(small, steps, 0.0))
    angle = ew.mul(frac, _PI)
    left = ew.sub(right, ew.div(ew.mul(mathops.cos(angle), _PI), mathops.sin(angle)))
    result = where(refl, left, right)
    plain = x.detach()
    zero = ew.compare("equal", plain, 0.0)
    pole = mathops.bitwise_and(ew.compare("less", plain, 0.0),
                               ew.compare("equal", mathops.floor(plain), plain))
    result = where(pole, math.nan, result)
    result = where(zero, pick(signbit_of(plain), math.inf, -math.inf, result), result)
    return done(result, out)
