"""torch.special's ``zeta`` (Hurwitz's), ``polygamma`` (also ``fnn.polygamma`` and the
Tensor method), ``erfcx`` and ``ndtri``: composites of tensor ops, so they run on every
backend (float32 computed in float64 where the device has it), with the conventions of
:mod:`fastnn.ops.special` (branches chosen with ``where`` on harmless stand-ins, integers
as the default float).

- ``zeta(x, q)`` = sum over n >= 0 of (q + n)^-x: Cephes' Euler-Maclaurin summation (10
  terms, then the integral and 12 Bernoulli corrections, as PyTorch's) for q > 0. For
  q < 0 (x must then be an integer) it is the sum over every whole j of (f + j)^-x,
  f = q - floor(q + 1/2), less (-1)^x zeta(x, 1 - q): the two-sided sum taken term by
  term near its poles (pairs of terms that cancel exactly where they do, as in the direct
  sum) and through zetas of positive arguments beyond, so no step depends on how negative
  q is. inf where x = 1 or q is an integer <= 0, NaN where x < 1 or q < 0 with a
  fractional x.
- ``polygamma(n, x)`` = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, ``digamma`` for n = 0.
- ``erfcx(x)`` = e^(x^2) erfc(x): e^(x^2) (1 - erf(x)) below 1.5, Laplace's continued
  fraction (96 levels) above, 2 e^(x^2) - erfcx(-x) for negative x.
- ``ndtri(p)``, the standard normal's quantile: Cephes' three rational approximations.

Gradients are PyTorch's: polygamma(n, x)' = polygamma(n + 1, x), erfcx' = 2x erfcx(x) -
2/sqrt(pi), ndtri' = sqrt(2 pi) e^(ndtri^2 / 2), and zeta's with respect to q,
-x zeta(x + 1, q); with respect to x it is not implemented (as PyTorch's: the backward
raises).
"""

from __future__ import annotations

import math

from fastnn.autograd.function import Function
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops
from fastnn.ops.special import const, done, lift, pair
from fastnn.ops.special_bessel import polevl, smooth
from fastnn.ops.special_gamma import digamma
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where
_INF, _NAN = math.inf, math.nan
_BERNOULLI = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
              7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
              -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _not(cond: Tensor) -> Tensor:
    return mathops.bitwise_not(cond)


def _zeta_positive(x: Tensor, q: Tensor) -> Tensor:
    """zeta(x, q) for x > 1, 0 < q < inf (Cephes' zeta without its early exits)."""
    total = ew.pow(q, ew.neg(x))
    b = total
    for i in range(1, 10):
        b = ew.pow(ew.add(q, float(i)), ew.neg(x))
        total = ew.add(total, b)
    w = ew.add(q, 9.0)
    total = ew.add(total, ew.sub(ew.div(ew.mul(b, w), ew.sub(x, 1.0)), ew.mul(b, 0.5)))
    ab = ew.div(ew.mul(x, b), w)  # a b of Cephes' loop, kept as one product (no overflow)
    w2 = ew.mul(w, w)
    for i, bernoulli in enumerate(_BERNOULLI):
        total = ew.add(total, ew.div(ab, bernoulli))
        ab = ew.div(ew.mul(ew.mul(ab, ew.add(x, 2.0 * i + 1)), ew.add(x, 2.0 * i + 2)), w2)
    return total


_PAIRS = 5


def _power(base: Tensor, s: Tensor, parity: Tensor) -> Tensor:
    """base^-s for a whole s, base of either sign ((-1)^s = parity)."""
    value = ew.pow(ew.abs(base), ew.neg(s))
    return where(ew.compare("less", base, 0.0), ew.mul(value, parity), value)


def _zeta(x: Tensor, q: Tensor) -> Tensor:
    """zeta(x, q) for every x and q (both one dtype and shape)."""
    integer_x = ew.compare("equal", mathops.floor(x), x)
    negative = ew.compare("less", q, 0.0)
    pole = mathops.bitwise_and(_not(ew.compare("greater", q, 0.0)),
                               ew.compare("equal", mathops.floor(q), q))
    usable = mathops.bitwise_and(ew.compare("greater", x, 1.0), _not(pole))
    usable = mathops.bitwise_and(usable, _not(mathops.bitwise_and(negative, _not(integer_x))))
    usable = mathops.bitwise_and(usable, ew.compare("less", q, _INF))
    reflect = mathops.bitwise_and(usable, negative)
    s = where(usable, x, 2.0)
    direct = _zeta_positive(s, where(usable, where(negative, 1.0, q), 1.0))
    odd = ew.compare("equal", ew.sub(s, ew.mul(mathops.floor(ew.mul(s, 0.5)), 2.0)), 1.0)
    parity = where(odd, -1.0, const(s, 1.0))  # (-1)^s
    f = ew.sub(q, mathops.floor(ew.add(q, 0.5)))  # in [-1/2, 1/2), q - f whole
    f = where(reflect, f, 0.25)
    # the sum over every whole j of (f + j)^-s: j and 1 - j in pairs (exact where they
    # cancel), the tails beyond as zetas of positive arguments
    total = ew.add(_zeta_positive(s, ew.add(f, _PAIRS + 1.0)),
                   ew.mul(parity, _zeta_positive(s, ew.sub(_PAIRS, f))))
    for j in range(_PAIRS, 0, -1):
        pair_sum = ew.add(_power(ew.add(f, float(j)), s, parity),
                          _power(ew.sub(f, float(j - 1)), s, parity))
        total = ew.add(total, pair_sum)
    # less the terms of j < q - f, those before q's
    tail = _zeta_positive(s, where(reflect, ew.sub(1.0, q), 1.0))
    value = where(reflect, ew.sub(total, ew.mul(parity, tail)), direct)
    value = where(ew.compare("equal", q, _INF), 0.0, value)
    huge = mathops.bitwise_and(ew.compare("equal", x, _INF), ew.compare("greater", q, 0.0))
    value = where(huge, ew.pow(where(huge, q, 1.0), ew.neg(x)), value)  # q^-inf alone
    value = where(ew.compare("equal", ew.add(x, q), ew.add(x, q)), value, ew.add(x, q))
    # PyTorch's (Cephes') order: x = 1 -> inf, x < 1 -> NaN, then q's poles -> inf, then
    # q < 0 with a fractional x -> NaN
    value = where(mathops.bitwise_and(negative, _not(integer_x)), _NAN, value)
    value = where(pole, _INF, value)
    value = where(ew.compare("less", x, 1.0), _NAN, value)
    return where(ew.compare("equal", x, 1.0), _INF, value)


class _Zeta(Function):
    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x, q)
        return _zeta(x, q)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' with respect to x (self) is "
                                      "not implemented (as PyTorch's); only q (other) has one")
        x, q = ctx.saved_tensors
        return None, ew.mul(grad, ew.neg(ew.mul(x, _zeta_tensor(ew.add(x, 1.0), q))))


def _zeta_tensor(x: Tensor, q: Tensor) -> Tensor:
    shape = ew.broadcast_shape("zeta", x.shape, q.shape)
    from fastnn.ops.movement import broadcast_to

    return _Zeta.apply(broadcast_to(x, shape), broadcast_to(q, shape))


@public(functional=False)
def zeta(input, other):
    """Hurwitz's zeta function zeta(x, q) = sum over n >= 0 of (q + n)^-x (``input`` x,
    ``other`` q; either may be a Python number); differentiable in q only."""
    x, q, out = pair("zeta", input, other)
    x, _ = lift("zeta", x, precise=True)
    q = q.to(x._dtype)
    return done(_zeta_tensor(x, q), out)


def _order(n) -> int:
    if isinstance(n, Tensor):
        if n.numel() != 1:
            raise RuntimeError("polygamma: n must be an integer, got a tensor of "
                               f"{n.numel()} elements")
        n = n.item()
    if isinstance(n, bool) or not isinstance(n, int) and not (isinstance(n, float)
                                                             and n.is_integer()):
        raise TypeError(f"polygamma: n must be an int, got {n!r}")
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}")
    return int(n)


def _polygamma_value(n: int):
    def value(x: Tensor) -> Tensor:
        if n == 0:
            return digamma(x)
        scale = (-1.0) ** (n + 1) * math.factorial(n)
        return ew.mul(_zeta(const(x, n + 1.0), x), scale)

    return value


@public(top=True, functional=False)
def polygamma(n, input):
    """The n-th derivative of digamma, (-1)^(n+1) n! zeta(n + 1, x) (digamma for n = 0):
    inf of the sign of (-1)^(n+1) at 0 and the negative integers, 0 at +inf."""
    n = _order(n)
    return smooth("polygamma", input, _polygamma_value(n), lambda x: polygamma(n + 1, x))


@public(method="polygamma", functional=False, name="polygamma_method")
def polygamma_method(self, n):
    """``x.polygamma(n)``: :func:`polygamma` (n, x)."""
    return polygamma(n, self)


_SQRT_PI = math.sqrt(math.pi)


def _erfcx(x: Tensor) -> Tensor:
    a = ew.abs(x)
    far = _not(ew.compare("less", a, 1.5))
    near = where(far, 0.0, a)
    low = ew.mul(ew.exp(ew.mul(near, near)), ew.sub(1.0, ew.erf(near)))
    outer = where(far, a, 2.0)
    fraction = outer
    for k in range(96, 0, -1):
        fraction = ew.add(outer, ew.div(k / 2.0, fraction))
    positive = where(far, ew.div(1.0 / _SQRT_PI, fraction), low)
    xn = where(ew.compare("less", x, 0.0), x, 0.0)
    return where(ew.compare("less", x, 0.0),
                 ew.sub(ew.mul(ew.exp(ew.mul(xn, xn)), 2.0), positive), positive)


@public(functional=False)
def erfcx(input):
    """The scaled complementary error function e^(x^2) erfc(x), to full relative precision
    for large x (where erfc underflows); +inf from about x < -26.6."""
    return smooth("erfcx", input, _erfcx,
                  lambda x: ew.sub(ew.mul(ew.mul(x, erfcx(x)), 2.0), 2.0 / _SQRT_PI))
_NDTRI_P0 = (-59.96335010141079, 98.00107541859997, -56.67628574690703, 13.931260938727968,
    -1.2391658386738125)
_NDTRI_Q0 = (1.0, 1.9544885833814176, 4.676279128988815, 86.36024213908905, -225.46268785411937,
    200.26021238006066, -82.03722561683334, 15.90562251262117, -1.1833162112133)
_NDTRI_P1 = (4.0554489230596245, 31.525109459989388, 57.16281922464213, 44.08050738932008,
    14.684956192885803, 2.1866330685079025, -0.1402560791713545, -0.03504246268278482,
    -0.0008574567851546854)
_NDTRI_Q1 = (1.0, 15.779988325646675, 45.39076351288792, 41.3172038254672, 15.04253856929075,
    2.504649462083094, -0.14218292285478779, -0.03808064076915783, -0.0009332594808954574)
_NDTRI_P2 = (3.2377489177694603, 6.915228890689842, 3.9388102529247444, 1.3330346081580755,
    0.20148538954917908, 0.012371663481782003, 0.00030158155350823543, 2.6580697468673755e-06,
    6.239745391849833e-09)
_NDTRI_Q2 = (1.0, 6.02427039364742, 3.6798356385616087, 1.3770209948908132, 0.21623699359449663,
    0.013420400608854318, 0.00032801446468212774, 2.8924786474538068e-06, 6.790194080099813e-09)
_EXP_M2 = 0.13533528323661269189  # e^-2


def _ndtri(y0: Tensor) -> Tensor:
    upper = ew.compare("greater", y0, 1.0 - _EXP_M2)
    y = where(upper, ew.sub(1.0, y0), y0)
    central = ew.compare("greater", y, _EXP_M2)
    yc = ew.sub(where(central, y, 0.5), 0.5)
    y2 = ew.mul(yc, yc)
    middle = ew.mul(ew.add(yc, ew.mul(yc, ew.div(ew.mul(y2, polevl(y2, _NDTRI_P0)),
                                                 polevl(y2, _NDTRI_Q0)))),
                    math.sqrt(2 * math.pi))
    yt = where(mathops.bitwise_and(_not(central), ew.compare("greater", y, 0.0)), y, 0.05)
    x = ew.sqrt(ew.mul(ew.log(yt), -2.0))
    x0 = ew.sub(x, ew.div(ew.log(x), x))
    z = ew.div(1.0, x)
    near = ew.compare("less", x, 8.0)
    x1 = where(near, ew.div(ew.mul(z, polevl(z, _NDTRI_P1)), polevl(z, _NDTRI_Q1)),
               ew.div(ew.mul(z, polevl(z, _NDTRI_P2)), polevl(z, _NDTRI_Q2)))
    tail = ew.sub(x0, x1)
    tail = where(upper, tail, ew.neg(tail))
    value = where(central, middle, tail)
    value = where(ew.compare("equal", y0, 0.0), -_INF, value)
    value = where(ew.compare("equal", y0, 1.0), _INF, value)
    outside = mathops.bitwise_or(ew.compare("less", y0, 0.0), ew.compare("greater", y0, 1.0))
    return where(ew.compare("equal", y0, y0), where(outside, _NAN, value), y0)


@public(functional=False)
def ndtri(input):
    """The standard normal's quantile function, the inverse of ``ndtr``: -inf at 0, +inf at
    1, NaN outside [0, 1]."""
    def slope(p):
        x = ndtri(p)
        return ew.mul(ew.exp(ew.mul(ew.mul(x, x), 0.5)), math.sqrt(2 * math.pi))

    return smooth("ndtri", input, _ndtri, slope)
