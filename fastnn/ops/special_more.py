"""The functions of ``torch.special`` that fastnn had not had: ``ndtr`` and ``log_ndtr``
(the standard normal's CDF and its logarithm), ``entr``, ``xlog1py`` and ``multigammaln``
(``mvlgamma``). Composites of erf/erfc, log and lgamma, so their gradients come from
those; ``fastnn.special`` lists them with the ones defined elsewhere."""

from __future__ import annotations

import math

from fastnn.ops import elementwise as ew
from fastnn.ops import mathops
from fastnn.ops.elementwise_more import _isnan, _not, times_log
from fastnn.ops.special import done, lift
from fastnn.ops.special_gamma import erfc, erfc_fraction, lgamma
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where
_SQRT_HALF = math.sqrt(0.5)
_TAIL = 2.5  # erfc's argument from which its continued fraction is used (as erfc does)


@public(functional=False)
def ndtr(x):
    """The standard normal's CDF, 0.5 * erfc(-x / sqrt(2)): full relative precision in the
    lower tail too (erfc's continued fraction)."""
    x, out = lift("ndtr", x, precise=True)
    return done(ew.mul(erfc(ew.mul(x, -_SQRT_HALF)), 0.5), out)


@public(functional=False)
def log_ndtr(x):
    """log(ndtr(x)) without underflow: far in the lower tail from the logarithm of erfc's
    continued fraction (-z*z - log(2 sqrt(pi) fraction(z)), z = -x / sqrt(2)), log1p of
    the upper tail's complement above 0."""
    x, out = lift("log_ndtr", x, precise=True)
    z = ew.mul(x, -_SQRT_HALF)
    zc = z.detach()
    tail = _not(ew.compare("less", zc, _TAIL))
    upper = ew.compare("less", zc, 0.0)
    zt = where(tail, z, _TAIL)
    far = ew.sub(ew.neg(ew.mul(zt, zt)),
                 ew.log(ew.mul(erfc_fraction(zt), 2.0 * math.sqrt(math.pi))))
    zm = where(mathops.bitwise_or(tail, upper), 0.0, z)
    middle = ew.log(ew.mul(erfc(zm), 0.5))
    zu = where(upper, z, 0.0)
    high = mathops.log1p(ew.mul(erfc(ew.neg(zu)), -0.5))
    return done(where(tail, far, where(upper, high, middle)), out)


@public(functional=False)
def entr(x):
    """-x * log(x) elementwise: 0 at 0, -inf below 0, NaN at NaN."""
    x, out = lift("entr", x)
    xc = x.detach()
    positive = ew.compare("greater", xc, 0.0)
    value = ew.neg(ew.mul(x, ew.log(where(positive, x, 1.0))))
    value = where(positive, value, where(ew.compare("equal", xc, 0.0), 0.0, -math.inf))
    return done(where(_isnan(x), x, value), out)


@public(functional=False)
def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is NaN), as scipy and
    PyTorch."""
    return times_log("xlog1py", input, other, mathops.log1p, -1.0, 0.0)


@public(method="mvlgamma", top=True, name="mvlgamma", functional=False)
def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension ``p``:
    p (p - 1) / 4 log(pi) + sum over i < p of lgamma(input - i / 2); every element must
    exceed (p - 1) / 2, as PyTorch requires (``torch.mvlgamma``)."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"multigammaln: p must be an int >= 1, got {p!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"multigammaln: expected a Tensor, got {type(input).__name__}")
    low = (p - 1) / 2
    if bool(_not(ew.compare("greater", input.detach(), low)).any().item()):
        raise ValueError(f"multigammaln: every element must be greater than (p - 1) / 2 = "
                         f"{low}")
    total = lgamma(input)
    for i in range(1, p):
        total = ew.add(total, lgamma(ew.sub(input, i / 2)))
    return ew.add(total, p * (p - 1) / 4 * math.log(math.pi))
