"""The regularized incomplete gamma functions: ``fnn.special.gammainc`` (P(a, x), also
``fnn.igamma`` and the Tensor method) and ``gammaincc`` (Q(a, x) = 1 - P, ``fnn.igammac``).

NOTE: these read their inputs back to the host and compute there in float64 with NumPy
(their series and continued fractions take a number of steps that depends on the values,
up to thousands, which a fixed composite of tensor ops cannot follow), then send the
result back to the input's device. The algorithm is PyTorch's (SciPy's, after Cephes and
Boost): DLMF 8.11.4's series for P, 8.7.3's for Q at small x, 8.9.2's continued fraction
for Q at large x, each scaled by x^a e^-x / Gamma(a) from Lanczos' approximation near
a = x; and Temme's uniform asymptotic expansion (DLMF 8.12.3/8.12.4) for a > 10^4 near
x = a, where the series would need too many steps (PyTorch uses it from a > 20, with a
longer table; the two agree to rounding).

Gradients are PyTorch's: with respect to x, x^(a-1) e^-x / Gamma(a) (negated for Q),
composed of tensor ops on the device; with respect to a it is not implemented (the
backward raises, as PyTorch's). Boundaries as PyTorch's: NaN for a < 0 or x < 0,
P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0, P(a, inf) = 1, NaN at (inf, inf).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from fastnn.autograd.function import Function
from fastnn.ops import elementwise as ew
from fastnn.ops.movement import broadcast_to
from fastnn.ops.sorting import host
from fastnn.ops.special import done, pair
from fastnn.ops.special_gamma import lgamma
from fastnn.ops.structure import const
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

_EPS = 1.11022302462515654042e-16
_MAXITER = 20000
_MAXLOG = 7.09782712893383996843e2
_LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_NUM = (0.006061842346248906525783753964555936883222,
                0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208,
                449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526,
                75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507,
                3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571,
                43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342,
                103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0,
                105258076.0, 150917976.0, 120543840.0, 39916800.0, 0.0)
_ASYMPTOTIC_FROM = 1e4  # a above it (and |x - a| / a < 4.5 / sqrt(a)): Temme's expansion
# Temme's coefficients d[k][n] (DLMF 8.12.9), the rows and columns a > 10^4 needs
_TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
     0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05, -2.1854485106799924e-06,
     -1.85406221071516e-06, 8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09,
     1.0261809784240309e-08, -4.382036018453353e-09, 9.14769958223679e-10),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454, -0.0009902263374485596,
     0.00020576131687242798, -4.018775720164609e-07, -1.8098550334489977e-05, 7.64916091608111e-06,
     -1.6120900894563446e-06, 4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049, 2.0093878600823047e-06,
     -0.00010736653226365161, 5.2923448829120125e-05, -1.2760635188618728e-05,
     3.423578734096138e-08, 1.3721957309062932e-06, -6.298992138380055e-07, 1.4280614206064242e-07,
     -2.0477098421990866e-10, -1.409252991086752e-08, 6.228974084922022e-09,
     -1.3670488396617112e-09),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557, 0.00026772063206283885,
     -7.561801671883977e-05, -2.396505113867297e-07, 1.1082654115347302e-05,
     -5.6749528269915965e-06, 1.4230900732435883e-06, -2.7861080291528143e-11,
     -1.6958404091930278e-07, 8.099464905388083e-08, -1.9111168485973655e-08,
     2.3928620439808118e-12, 2.0620131815488797e-09),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
     1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06, 8.907507532205309e-07,
     -2.292934834000805e-07, 2.956794137544049e-11, 2.8865829742708783e-08,
     -1.4189739437803219e-08, 3.4463580499464896e-09),
)


_lgamma = np.frompyfunc(math.lgamma, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _lgam(v: np.ndarray) -> np.ndarray:
    return _lgamma(v).astype(np.float64)


@functools.cache
def _riemann(k: int) -> float:
    """zeta(k) for an integer k >= 2: 1000 terms and the Euler-Maclaurin tail."""
    n = 1000.0
    return (math.fsum(m ** -k for m in range(1, 1000)) + n ** (1 - k) / (k - 1) + 0.5 * n ** -k
            + k * n ** (-k - 1) / 12 - k * (k + 1) * (k + 2) * n ** (-k - 3) / 720)


def _lgam1p_taylor(x: np.ndarray) -> np.ndarray:
    """log Gamma(1 + x) for |x| <= 1/2: -gamma x + sum zeta(n) (-x)^n / n."""
    total = -0.5772156649015329 * x
    power = -x
    for n in range(2, 43):
        power = power * -x
        total = total + _riemann(n) * power / n
    return total


def _lgam1p(a: np.ndarray) -> np.ndarray:
    """log Gamma(1 + a), accurate also for small a (where 1 + a rounds), as SciPy's."""
    small = np.abs(a) <= 0.5
    near_one = ~small & (np.abs(a - 1) < 0.5)
    return np.where(small, _lgam1p_taylor(np.where(small, a, 0.0)),
                    np.where(near_one, np.log(np.where(near_one, a, 1.0))
                             + _lgam1p_taylor(np.where(near_one, a - 1, 0.0)), _lgam(a + 1)))


def _lanczos(a: np.ndarray) -> np.ndarray:
    """Boost's lanczos_sum_expg_scaled(a), a > 0 (as a ratio in 1/a above 1)."""
    big = a > 1
    y = np.where(big, 1 / a, a)
    num = np.polyval(_LANCZOS_NUM[::-1], y)
    den = np.polyval(_LANCZOS_DEN[::-1], y)
    return np.where(big, num / den, np.polyval(_LANCZOS_NUM, y) / np.polyval(_LANCZOS_DEN, y))


def _fac(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """x^a e^-x / Gamma(a), accurate also where x is near a."""
    plain = a * np.log(x) - x - _lgam(a)
    plain = np.where(plain < -_MAXLOG, 0.0, np.exp(plain))
    fac = a + _LANCZOS_G - 0.5
    res = np.sqrt(fac / math.e) / _lanczos(a)
    small = (a < 200) & (x < 200)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    res = res * np.where(small, np.exp(a - x) * (x / fac) ** a,
                         np.exp(a * (np.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac))
    return np.where(np.abs(a - x) > 0.4 * np.abs(a), plain, res)


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) by DLMF 8.11.4."""
    ax = _fac(a, x)
    r, c, total = a.copy(), np.ones_like(a), np.ones_like(a)
    live = np.nonzero(ax != 0)[0]
    for _ in range(_MAXITER):
        if not live.size:
            break
        r[live] += 1.0
        c[live] *= x[live] / r[live]
        total[live] += c[live]
        live = live[c[live] > _EPS * total[live]]
    return np.where(ax == 0, 0.0, total * ax / a)


def _upper_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by DLMF 8.7.3 (small x)."""
    fac, total = np.ones_like(a), np.zeros_like(a)
    live = np.arange(a.size)
    for n in range(1, _MAXITER):
        if not live.size:
            break
        fac[live] *= -x[live] / n
        term = fac[live] / (a[live] + n)
        total[live] += term
        live = live[np.abs(term) > _EPS * np.abs(total[live])]
    logx = np.log(x)
    return -np.expm1(a * logx - _lgam1p(a)) - np.exp(a * logx - _lgam(a)) * total


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by DLMF 8.9.2's continued fraction (large x)."""
    ax = _fac(a, x)
    y, z, c = 1.0 - a, x + 2.0 - a, np.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(a), x.copy(), x + 1.0, z * x
    ans = pkm1 / qkm1
    live = np.nonzero(ax != 0)[0]
    for _ in range(_MAXITER):
        if not live.size:
            break
        c[live] += 1.0
        y[live] += 1.0
        z[live] += 2.0
        yc = y[live] * c[live]
        pk = pkm1[live] * z[live] - pkm2[live] * yc
        qk = qkm1[live] * z[live] - qkm2[live] * yc
        nonzero = qk != 0
        r = np.where(nonzero, pk / np.where(nonzero, qk, 1.0), ans[live])
        t = np.where(nonzero, np.abs((ans[live] - r) / np.where(r == 0, 1.0, r)), 1.0)
        ans[live] = r
        pkm2[live], pkm1[live], qkm2[live], qkm1[live] = pkm1[live], pk, qkm1[live], qk
        big = np.abs(pk) > 4.503599627370496e15
        for arr in (pkm2, pkm1, qkm2, qkm1):
            arr[live[big]] *= 2.22044604925031308085e-16
        live = live[t > _EPS]
    return np.where(ax == 0, 0.0, ans * ax)


def _asymptotic(a: np.ndarray, x: np.ndarray, lower: bool) -> np.ndarray:
    """P (``lower``) or Q by Temme's uniform expansion (DLMF 8.12.3/8.12.4), large a."""
    sign = -1.0 if lower else 1.0
    sigma = (x - a) / a
    eta = np.sign(sigma) * np.sqrt(-2 * (np.log1p(sigma) - sigma))
    total, afac = np.zeros_like(a), np.ones_like(a)
    for row in _TEMME:
        total += np.polyval(row[::-1], eta) * afac
        afac = afac / a
    base = 0.5 * _erfc(sign * eta * np.sqrt(a / 2)).astype(np.float64)
    return base + sign * np.exp(-0.5 * a * eta * eta) * total / np.sqrt(2 * math.pi * a)


def _near(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (a > _ASYMPTOTIC_FROM) & (np.abs(x - a) / a < 4.5 / np.sqrt(a))


def _put(out, mask, fn, a, x, *args) -> None:
    if mask.any():
        out[mask] = fn(a[mask], x[mask], *args)


def _boundaries(a: np.ndarray, x: np.ndarray, lower: bool) -> tuple:
    """(the values at the boundaries, in PyTorch's order of its checks; the mask of the
    regular points, where NaN stays NaN)."""
    inside = 0.0 if lower else 1.0  # P and Q at x = 0 and at a = inf
    out = np.full(a.shape, np.nan)
    left = ~((x < 0) | (a < 0))
    for cond, value in (((a == 0), np.where(x > 0, 1.0 - inside, np.nan)),
                        ((x == 0), inside),
                        (np.isinf(a), np.where(np.isinf(x), np.nan, inside)),
                        (np.isinf(x), 1.0 - inside)):
        hit = left & cond
        out[hit] = np.broadcast_to(value, a.shape)[hit]
        left &= ~cond
    return out, left


def _gammaincc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    out, rest = _boundaries(a, x, False)
    with np.errstate(all="ignore"):
        near = rest & _near(a, x)
        _put(out, near, _asymptotic, a, x, False)
        rest = rest & ~near
        with_p = rest & (((x > 1.1) & (x < a)) | ((x <= 0.5) & (-0.4 / np.log(x) < a))
                         | ((x > 0.5) & (x <= 1.1) & (x * 1.1 < a)))
        _put(out, with_p, lambda u, v: 1.0 - _lower_series(u, v), a, x)
        _put(out, rest & ~with_p & (x > 1.1), _upper_fraction, a, x)
        _put(out, rest & ~with_p & ~(x > 1.1), _upper_series, a, x)
    return out


def _gammainc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    out, rest = _boundaries(a, x, True)
    with np.errstate(all="ignore"):
        near = rest & _near(a, x)
        _put(out, near, _asymptotic, a, x, True)
        rest = rest & ~near
        with_q = rest & (x > 1.0) & (x > a)
        _put(out, with_q, lambda u, v: 1.0 - _gammaincc(u, v), a, x)
        _put(out, rest & ~with_q, _lower_series, a, x)
    return out


class _IncompleteGamma(Function):
    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.upper = upper
        ctx.save_for_backward(a, x)
        values = [np.asarray(host(t.contiguous()), np.float64) for t in (a, x)]
        result = (_gammaincc if upper else _gammainc)(*values)
        return const(result, x, x._dtype)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented "
                                      f"(as PyTorch's): only x (other) has a gradient")
        a, x = ctx.saved_tensors
        log_density = ew.sub(ew.sub(ew.mul(ew.sub(a, 1.0), ew.log(x)), x), lgamma(a))
        slope = ew.exp(log_density)
        return None, ew.mul(grad, ew.neg(slope) if ctx.upper else slope), None


def _incomplete(op: str, a, x, upper: bool) -> Tensor:
    a, x, out = pair(op, a, x)
    shape = ew.broadcast_shape(op, a.shape, x.shape)
    result = _IncompleteGamma.apply(broadcast_to(a, shape), broadcast_to(x, shape), upper)
    return done(result, out)


@public(method=True, top=True, functional=False)
def igamma(input, other):
    """P(a, x), the regularized lower incomplete gamma function of a = ``input`` and
    x = ``other`` (see the module: computed on the host)."""
    return _incomplete("igamma", input, other, False)


@public(method=True, top=True, functional=False)
def igammac(input, other):
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function (see the
    module: computed on the host)."""
    return _incomplete("igammac", input, other, True)


gammainc = igamma
gammaincc = igammac
