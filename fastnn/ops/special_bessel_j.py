"""The Bessel functions of the first and second kinds of torch.special: ``bessel_j0``,
``bessel_j1``, ``bessel_y0``, ``bessel_y1``, and ``spherical_bessel_j0`` and ``airy_ai``.

Cephes' rational approximations (j0.c, j1.c, airy.c, as PyTorch's): on |x| <= 5 a ratio of
polynomials in x^2 (with J's first two zeros factored out, and (2/pi) log(x) J(x) added for
Y), beyond it the Hankel asymptotic form sqrt(2/(pi x)) (P cos(x - phase) - Q sin(...));
Ai by its power series on (-2.09, 2.09) and asymptotic forms outside. Composites of tensor
ops (float32 computed in float64 where the device has it).

NOTE: PyTorch's ports drop the implicit leading 1 of Cephes' ``p1evl`` denominators in the
x > 5 branches (and Ai's x < -2.09 one), which costs them up to 1e-6 (Ai: 3e-6) of absolute
accuracy there; these follow Cephes and scipy.special to double precision instead.

PyTorch gives none of these a gradient. Here J and Y have their derivatives
(J0' = -J1, J1' = J0 - J1/x, Y0' = -Y1, Y1' = Y0 - Y1/x, as autograd Functions, so
gradients of gradients follow) and spherical_bessel_j0 (sin x / x) the gradient of its
composite; airy_ai, as PyTorch's, has none.
"""

from __future__ import annotations

import math

from fastnn.ops import elementwise as ew
from fastnn.ops import mathops
from fastnn.ops.special import done, lift
from fastnn.ops.special_bessel import polevl, smooth
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where
_SQ2OPI = 7.9788456080286535587989e-1  # sqrt(2 / pi)
_TWOOPI = 2.0 / math.pi

# Cephes' coefficients, highest power first (the J0 and J1 asymptotic ones serve Y0 and Y1)
_J0_PP = (0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687,
    8.74716500199817, 5.303240382353949, 1.0)
_J0_PQ = (0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171,
    8.761908832370695, 5.306052882353947, 1.0)
_J0_QP = (-0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
    -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285)
_J0_QQ = (64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525,
    5930.727011873169, 2062.0933166032783, 242.0057402402914)
_J0_RP = (-4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0)
_J0_RQ = (499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683,
    2112775201154.892, 310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18)
_Y0_YP = (15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115,
    87590639439536.7, -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16)
_Y0_YQ = (1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935,
    20297961275010.555, 3171577528429750.5, 2.5059625617265306e+17)
_J1_PP = (0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
    8.424045901417724, 5.214515986823615, 1.0)
_J1_PQ = (0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015,
    8.399855543276042, 5.209828486823619, 1.0)
_J1_QP = (0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508,
    710.8563049989261, 597.4896124006136, 211.68875710057213, 25.207020585802372)
_J1_QQ = (74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562,
    7997.041604473507, 2826.1927851763908, 336.0936078106983)
_J1_RP = (-899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0)
_J1_RQ = (620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925,
    4749141220799.914, 784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18)
_Y1_YP = (1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0,
    2.024394757135949e+17, -7.788771962659501e+17)
_Y1_YQ = (594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617,
    3882312774962.3857, 620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18)
_AI_AN = (0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058,
    159.75639135016442, 70.53609068404442, 14.026469116338967, 1.0)
_AI_AD = (0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045,
    164.2346928715297, 71.47784008255756, 14.095913560783403, 1.0)
_AI_AFN = (-0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
    -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621, -2.776491081552329e-06,
    -1.6778769848911465e-08)
_AI_AFD = (13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596,
    1.4752914677166642, 0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05,
    4.5185009297058035e-07)
_AI_AGN = (0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
    0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737,
    6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10)
_AI_AGD = (9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755,
    0.9542936116189619, 0.08645808263523921, 0.004126565238242226, 0.00010125908511650914,
    1.1716673321441352e-06, 4.9183457006293e-09)


def _hankel(x: Tensor, first: bool, tables, phase: float) -> Tensor:
    """sqrt(2/(pi x)) (P cos(x - phase) - (5/x) Q sin(...)) for x > 5 (``first``), or
    (P sin + (5/x) Q cos) for Y; ``tables`` (PP, PQ, QP, QQ)."""
    pp, pq, qp, qq = tables
    w = ew.div(5.0, x)
    z = ew.mul(w, w)
    p = ew.div(polevl(z, pp), polevl(z, pq))
    q = ew.mul(w, ew.div(polevl(z, qp), polevl(z, qq, True)))
    angle = ew.sub(x, phase)
    cos, sin = mathops.cos(angle), mathops.sin(angle)
    if first:
        value = ew.sub(ew.mul(p, cos), ew.mul(q, sin))
    else:
        value = ew.add(ew.mul(p, sin), ew.mul(q, cos))
    return ew.div(ew.mul(value, _SQ2OPI), ew.sqrt(x))


_J0_TABLES = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ)
_J1_TABLES = (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
_PIO4, _THPIO4 = math.pi / 4, 3 * math.pi / 4


def _split(a: Tensor) -> tuple:
    """(a > 5, a where <= 5 else 1, a where > 5 else 6): the two branches' inputs."""
    far = ew.compare("greater", a, 5.0)
    return far, where(far, 1.0, a), where(far, a, 6.0)


def _j0(x: Tensor) -> Tensor:
    a = ew.abs(x)
    far, near, outer = _split(a)
    z = ew.mul(near, near)
    rational = ew.div(polevl(z, _J0_RP), polevl(z, _J0_RQ, True))
    small = ew.mul(ew.mul(ew.sub(z, 5.78318596294678452118), ew.sub(z, 30.4712623436620863991)),
                   rational)
    small = where(ew.compare("less", near, 1e-5), ew.sub(1.0, ew.mul(z, 0.25)), small)
    return where(far, _hankel(outer, True, _J0_TABLES, _PIO4), small)


def _j1(x: Tensor) -> Tensor:
    a = ew.abs(x)
    far, near, outer = _split(a)
    z = ew.mul(near, near)
    rational = ew.div(polevl(z, _J1_RP), polevl(z, _J1_RQ, True))
    small = ew.mul(ew.mul(ew.mul(rational, near), ew.sub(z, 14.6819706421238932572)),
                   ew.sub(z, 49.2184563216946036703))
    value = where(far, _hankel(outer, True, _J1_TABLES, _THPIO4), small)
    return where(ew.compare("less", x, 0.0), ew.neg(value), where(
        ew.compare("equal", x, 0.0), x, value))  # J1(-0.0) = -0.0


def _y(x: Tensor, order: int) -> Tensor:
    far, near, outer = _split(x)
    near = where(ew.compare("greater", near, 0.0), near, 1.0)
    z = ew.mul(near, near)
    if order == 0:
        small = ew.add(ew.div(polevl(z, _Y0_YP), polevl(z, _Y0_YQ, True)),
                       ew.mul(ew.mul(ew.log(near), _j0(near)), _TWOOPI))
        large = _hankel(outer, False, _J0_TABLES, _PIO4)
    else:
        small = ew.mul(near, ew.div(polevl(z, _Y1_YP), polevl(z, _Y1_YQ, True)))
        small = ew.add(small, ew.mul(ew.sub(ew.mul(_j1(near), ew.log(near)),
                                            ew.div(1.0, near)), _TWOOPI))
        large = _hankel(outer, False, _J1_TABLES, _THPIO4)
    value = where(far, large, small)
    value = where(ew.compare("equal", x, 0.0), -math.inf, value)
    value = where(ew.compare("less", x, 0.0), math.nan, value)
    return where(ew.compare("equal", x, x), value, x)


def _over_x(value: Tensor, x: Tensor) -> Tensor:
    """value / x, 1/2 at 0 (where value is J1 and J1(x)/x -> 1/2)."""
    zero = ew.compare("equal", x.detach(), 0.0)
    return where(zero, 0.5, ew.div(value, where(zero, 1.0, x)))


@public(functional=False)
def bessel_j0(input):
    """The Bessel function of the first kind of order 0, J0(x)."""
    return smooth("bessel_j0", input, _j0, lambda x: ew.neg(bessel_j1(x)))


@public(functional=False)
def bessel_j1(input):
    """The Bessel function of the first kind of order 1, J1(x) (odd)."""
    return smooth("bessel_j1", input, _j1,
                  lambda x: ew.sub(bessel_j0(x), _over_x(bessel_j1(x), x)))


@public(functional=False)
def bessel_y0(input):
    """The Bessel function of the second kind of order 0, Y0(x), x > 0 (-inf at 0, NaN
    below)."""
    return smooth("bessel_y0", input, lambda x: _y(x, 0), lambda x: ew.neg(bessel_y1(x)))


@public(functional=False)
def bessel_y1(input):
    """The Bessel function of the second kind of order 1, Y1(x), x > 0 (-inf at 0, NaN
    below)."""
    return smooth("bessel_y1", input, lambda x: _y(x, 1),
                  lambda x: ew.sub(bessel_y0(x), ew.div(bessel_y1(x), x)))


@public(functional=False)
def spherical_bessel_j0(input):
    """The spherical Bessel function of the first kind of order 0, sin(x) / x (its Taylor
    polynomial below |x| = 1/2; 0 at +-inf), differentiable as that composite."""
    x, out = lift("spherical_bessel_j0", input, precise=True)
    near = ew.compare("less", ew.abs(x.detach()), 0.5)
    xs = where(near, x, 0.0)
    z = ew.mul(xs, xs)
    series = polevl(z, [1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                        1.0 / 120.0, -1.0 / 6.0, 1.0])
    xf = where(near, 1.0, x)
    far = ew.div(mathops.sin(xf), xf)
    far = where(ew.compare("equal", ew.abs(x.detach()), math.inf), 0.0, far)
    return done(where(near, series, far), out)


def _airy(x: Tensor) -> Tensor:
    negative = ew.compare("less", x, -2.09)
    positive = mathops.bitwise_not(ew.compare("less", x, 2.09))
    # x < -2.09: the oscillating asymptotic form
    xn = where(negative, x, -3.0)
    t = ew.sqrt(ew.neg(xn))
    zeta = ew.mul(ew.mul(xn, t), -2.0 / 3.0)
    z = ew.div(1.0, zeta)
    zz = ew.mul(z, z)
    uf = ew.add(1.0, ew.div(ew.mul(zz, polevl(zz, _AI_AFN)), polevl(zz, _AI_AFD, True)))
    ug = ew.div(ew.mul(z, polevl(zz, _AI_AGN)), polevl(zz, _AI_AGD, True))
    theta = ew.add(zeta, math.pi / 4)
    left = ew.mul(ew.div(1.0 / math.sqrt(math.pi), ew.sqrt(t)),
                  ew.sub(ew.mul(mathops.sin(theta), uf), ew.mul(mathops.cos(theta), ug)))
    # x >= 2.09: the decaying one (0 beyond 103.892, where e^-zeta underflows)
    xp = where(positive, x, 3.0)
    t = ew.sqrt(xp)
    zeta = ew.mul(ew.mul(xp, t), 2.0 / 3.0)
    z = ew.div(1.0, zeta)
    f = ew.div(polevl(z, _AI_AN), polevl(z, _AI_AD))
    right = ew.div(ew.mul(f, 1.0 / math.sqrt(math.pi)),
                   ew.mul(ew.mul(ew.sqrt(t), 2.0), ew.exp(zeta)))
    right = where(ew.compare("greater", xp, 103.892), 0.0, right)
    # between: the power series of Ai = c1 f(x) - c2 g(x)
    xm = where(mathops.bitwise_or(negative, positive), 0.0, x)
    cube = ew.mul(ew.mul(xm, xm), xm)
    f = uf = ew.add(ew.mul(xm, 0.0), 1.0)
    g = ug = xm
    k = 1.0
    for _ in range(25):  # |x^3| < 9.2: the terms fall under 1e-17 of the sum well before
        uf = ew.div(ew.mul(uf, cube), (k + 1.0) * (k + 2.0))
        ug = ew.div(ew.mul(ug, cube), (k + 2.0) * (k + 3.0))
        f, g, k = ew.add(f, uf), ew.add(g, ug), k + 3.0
    middle = ew.sub(ew.mul(f, 0.355028053887817239260), ew.mul(g, 0.258819403792806798405))
    value = where(negative, left, where(positive, right, middle))
    return where(ew.compare("equal", ew.abs(x), math.inf), math.nan, value)


@public(functional=False)
def airy_ai(input):
    """The Airy function Ai(x) (NaN at +-inf, as PyTorch's); no gradient, as PyTorch's."""
    x, out = lift("airy_ai", input, precise=True)
    return done(_airy(x.detach()), out)
