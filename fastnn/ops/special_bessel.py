"""The modified Bessel functions of torch.special: ``i0`` (also ``fnn.i0`` and the Tensor
method), ``i0e``, ``i1``, ``i1e``, ``modified_bessel_i0``/``_i1`` (the same functions),
``modified_bessel_k0``/``_k1`` and ``scaled_modified_bessel_k0``/``_k1`` (e^x K).

Cephes' Chebyshev expansions (as PyTorch's): I on [0, 8] and (8, inf) through e^-|x| I,
K on (0, 2] and (2, inf), evaluated with tensor ops (Clenshaw's recurrence) so they run on
every backend; float32 is computed in float64 where the device has it. I0 and I1 are
e^|x| times the scaled ones, the exponential split in two halves so that they stay
finite up to where they overflow themselves (|x| ~ 713.9, not 709.8 as e^x).

Each is an autograd Function whose backward is its derivative, written with these same
functions (so gradients of gradients follow): I0' = I1, I1' = I0 - I1/x (1/2 at 0),
(e^-|x| I0)' = e^-|x| (I1 - sign(x) I0), K0' = -K1, K1' = -K0 - K1/x. PyTorch has
gradients for i0, i0e, i1, i1e; the K functions (and modified_bessel_i0/i1) have them
here too.
"""

from __future__ import annotations

import math

from fastnn.autograd.function import Function
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops
from fastnn.ops.special import done, lift
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where
_INF = math.inf

# Cephes' coefficients (i0.c, i1.c, k0.c, k1.c), the zeroth term last
_I0_A = (-4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13,
    2.95505266312964e-12, -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10,
    2.6598237246823866e-09, -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
    1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
    -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824, 0.0016394756169413357,
    -0.004324309995050576, 0.010546460394594998, -0.02373741480589947, 0.04930528423967071,
    -0.09490109704804764, 0.17162090152220877, -0.3046826723431984, 0.6767952744094761)
_I0_B = (-7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
    3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15,
    3.8116806693526224e-15, -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14,
    3.8527783827421426e-13, 7.180124451383666e-13, -1.7941785315068062e-12,
    -1.3215811840447713e-11, -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
    3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07, 2.8913705208347567e-06,
    6.889758346916825e-05, 0.0033691164782556943, 0.8044904110141088)
_I1_A = (2.7779141127610464e-18, -2.111421214358166e-17, 1.5536319577362005e-16,
    -1.1055969477353862e-15, 7.600684294735408e-15, -5.042185504727912e-14, 3.223793365945575e-13,
    -1.9839743977649436e-12, 1.1736186298890901e-11, -6.663489723502027e-11, 3.625590281552117e-10,
    -1.8872497517228294e-09, 9.381537386495773e-09, -4.445059128796328e-08, 2.0032947535521353e-07,
    -8.568720264695455e-07, 3.4702513081376785e-06, -1.3273163656039436e-05, 4.781565107550054e-05,
    -0.00016176081582589674, 0.0005122859561685758, -0.0015135724506312532, 0.004156422944312888,
    -0.010564084894626197, 0.024726449030626516, -0.05294598120809499, 0.1026436586898471,
    -0.17641651835783406, 0.25258718644363365)
_I1_B = (7.517296310842105e-18, 4.414348323071708e-18, -4.6503053684893586e-17,
    -3.209525921993424e-17, 2.96262899764595e-16, 3.3082023109209285e-16, -1.8803547755107825e-15,
    -3.8144030724370075e-15, 1.0420276984128802e-14, 4.272440016711951e-14,
    -2.1015418427726643e-14, -4.0835511110921974e-13, -7.198551776245908e-13,
    2.0356285441470896e-12, 1.4125807436613782e-11, 3.2526035830154884e-11,
    -1.8974958123505413e-11, -5.589743462196584e-10, -3.835380385964237e-09,
    -2.6314688468895196e-08, -2.512236237870209e-07, -3.882564808877691e-06,
    -0.00011058893876262371, -0.009761097491361469, 0.7785762350182801)
_K0_A = (1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11,
    1.904516377220209e-09, 2.5347910790261494e-07, 2.286212103119452e-05, 0.001264615411446926,
    0.0359799365153615, 0.3442898999246285, -0.5353273932339028)
_K0_B = (5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17,
    -1.678231096805412e-16, 5.512055978524319e-16, -1.848593377343779e-15, 6.3400764774050706e-15,
    -2.2275133269916698e-14, 8.032890775363575e-14, -2.9800969231727303e-13, 1.140340588208475e-12,
    -4.514597883373944e-12, 1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10,
    -1.69753450938906e-09, 8.574034017414225e-09, -4.660489897687948e-08, 2.766813639445015e-07,
    -1.8317555227191195e-06, 1.39498137188765e-05, -0.00012849549581627802, 0.0015698838857300533,
    -0.0314481013119645, 2.4403030820659555)
_K1_A = (-7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13,
    -1.4114883926335278e-10, -2.213387630734726e-08, -2.4334061415659684e-06,
    -0.0001730288957513052, -0.006975723859639864, -0.12261118082265715, -0.3531559607765449,
    1.5253002273389478)
_K1_B = (-5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17,
    1.838093544366639e-16, -6.057047248373319e-16, 2.038703165624334e-15, -7.019837090418314e-15,
    2.4771544244813043e-14, -8.976705182324994e-14, 3.3484196660784293e-13,
    -1.2891739609510289e-12, 5.13963967348173e-12, -2.1299678384275683e-11, 9.218315187605006e-11,
    -4.1903547593418965e-10, 2.015049755197033e-09, -1.0345762465678097e-08,
    5.7410841254500495e-08, -3.5019606030878126e-07, 2.406484947837217e-06, -1.936197974166083e-05,
    0.00019521551847135162, -0.002857816859622779, 0.10392373657681724, 2.7206261904844427)


class _Smooth(Function):
    """value(x) with gradient grad * slope(x), slope a differentiable fastnn function."""

    @staticmethod
    def forward(ctx, x, value, slope):
        ctx.slope = slope
        ctx.save_for_backward(x)
        return value(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return ew.mul(grad, ctx.slope(x)), None, None


def smooth(op: str, x, value, slope) -> Tensor:
    """``value`` of x (integers as the default float, float32 in float64 where the device
    has it), differentiable with derivative ``slope``."""
    x, out = lift(op, x, precise=True)
    return done(_Smooth.apply(x, value, slope), out)


def chbevl(x: Tensor, coefficients) -> Tensor:
    """Cephes' chbevl: sum' c_i T_i(x/2) by Clenshaw's recurrence (zeroth term last)."""
    b0 = ew.add(ew.mul(x, 0.0), coefficients[0])
    b1 = b2 = ew.mul(x, 0.0)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = ew.add(ew.sub(ew.mul(x, b1), b2), c)
    return ew.mul(ew.sub(b0, b2), 0.5)


def polevl(x: Tensor, coefficients, leading_one: bool = False) -> Tensor:
    """Cephes' polevl (p1evl with ``leading_one``): the polynomial, highest power first."""
    acc = ew.add(ew.mul(x, 0.0), 1.0 if leading_one else coefficients[0])
    for c in coefficients[0 if leading_one else 1:]:
        acc = ew.add(ew.mul(acc, x), c)
    return acc


def _scaled(x: Tensor, near, far, times_x: bool) -> Tensor:
    """e^-|x| I(|x|) from the [0, 8] and (8, inf) expansions (times |x| on [0, 8] for I1)."""
    a = ew.abs(x)
    large = ew.compare("greater", a, 8.0)
    inner = where(large, 8.0, a)
    low = chbevl(ew.sub(ew.mul(inner, 0.5), 2.0), near)
    if times_x:
        low = ew.mul(low, inner)
    outer = where(large, a, 9.0)
    high = ew.div(chbevl(ew.sub(ew.div(32.0, outer), 2.0), far), ew.sqrt(outer))
    return where(large, high, low)


def _grow(scaled: Tensor, x: Tensor, odd: bool) -> Tensor:
    """e^|x| * scaled; at x = +-inf, +inf (-inf for an ``odd`` function at -inf)."""
    a = ew.abs(x)
    half = ew.exp(ew.mul(a, 0.5))
    top = ew.mul(ew.sign(x), _INF) if odd else _INF
    return where(ew.compare("equal", a, _INF), top, ew.mul(ew.mul(scaled, half), half))


def _signed(value: Tensor, x: Tensor) -> Tensor:
    return where(ew.compare("less", x, 0.0), ew.neg(value), value)


def _i0e(x):
    return _scaled(x, _I0_A, _I0_B, False)


def _i1e(x):
    return _signed(_scaled(x, _I1_A, _I1_B, True), x)


def _over_x(i1: Tensor, x: Tensor) -> Tensor:
    """i1 / x, 1/2 at 0."""
    zero = ew.compare("equal", x.detach(), 0.0)
    return where(zero, 0.5, ew.div(i1, where(zero, 1.0, x)))


@public(method=True, top=True)
def i0(input):
    """The modified Bessel function of the first kind of order 0, I0(x)."""
    return smooth("i0", input, lambda x: _grow(_i0e(x), x, False), i1)


@public(functional=False)
def i0e(input):
    """e^-|x| I0(x), finite for every x."""
    return smooth("i0e", input, _i0e,
                  lambda x: ew.sub(i1e(x), ew.mul(ew.sign(x.detach()), i0e(x))))


@public(functional=False)
def i1(input):
    """The modified Bessel function of the first kind of order 1, I1(x) (odd)."""
    return smooth("i1", input, lambda x: _grow(_i1e(x), x, True),
                  lambda x: ew.sub(i0(x), _over_x(i1(x), x)))


@public(functional=False)
def i1e(input):
    """e^-|x| I1(x), finite for every x."""
    return smooth("i1e", input, _i1e,
                  lambda x: ew.sub(ew.sub(i0e(x), ew.mul(ew.sign(x.detach()), i1e(x))),
                                   _over_x(i1e(x), x)))


def _k(x: Tensor, order: int, scaled: bool) -> Tensor:
    """K0 or K1 of x (e^x K with ``scaled``): +inf at 0, NaN below, 0 at +inf (unscaled)."""
    near_c, far_c = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    small = mathops.bitwise_not(ew.compare("greater", x, 2.0))
    xs = where(small, where(ew.compare("greater", x, 0.0), x, 1.0), 1.0)
    series = chbevl(ew.sub(ew.mul(xs, xs), 2.0), near_c)
    log_half = ew.log(ew.mul(xs, 0.5))
    if order == 0:
        near = ew.sub(series, ew.mul(log_half, i0(xs)))
    else:
        near = ew.add(ew.mul(log_half, i1(xs)), ew.div(series, xs))
    xl = where(small, 3.0, x)
    far = ew.div(chbevl(ew.sub(ew.div(8.0, xl), 2.0), far_c), ew.sqrt(xl))
    if scaled:
        near = ew.mul(near, ew.exp(xs))
    else:
        far = ew.mul(far, ew.exp(ew.neg(xl)))
        far = where(ew.compare("equal", xl, _INF), 0.0, far)
    value = where(small, near, far)
    value = where(ew.compare("equal", x, 0.0), _INF, value)
    value = where(ew.compare("less", x, 0.0), math.nan, value)
    return where(ew.compare("equal", x, x), value, x)  # NaN stays NaN


@public(functional=False)
def modified_bessel_k0(input):
    """The modified Bessel function of the second kind of order 0, K0(x), x > 0."""
    return smooth("modified_bessel_k0", input, lambda x: _k(x, 0, False),
                  lambda x: ew.neg(modified_bessel_k1(x)))


@public(functional=False)
def modified_bessel_k1(input):
    """The modified Bessel function of the second kind of order 1, K1(x), x > 0."""
    return smooth("modified_bessel_k1", input, lambda x: _k(x, 1, False),
                  lambda x: ew.neg(ew.add(modified_bessel_k0(x),
                                          ew.div(modified_bessel_k1(x), x))))


@public(functional=False)
def scaled_modified_bessel_k0(input):
    """e^x K0(x), x > 0."""
    return smooth("scaled_modified_bessel_k0", input, lambda x: _k(x, 0, True),
                  lambda x: ew.sub(scaled_modified_bessel_k0(x), scaled_modified_bessel_k1(x)))


@public(functional=False)
def scaled_modified_bessel_k1(input):
    """e^x K1(x), x > 0."""
    def slope(x):
        k1 = scaled_modified_bessel_k1(x)
        return ew.sub(ew.sub(k1, scaled_modified_bessel_k0(x)), ew.div(k1, x))

    return smooth("scaled_modified_bessel_k1", input, lambda x: _k(x, 1, True), slope)


@public(functional=False)
def modified_bessel_i0(input):
    """I0(x), as :func:`i0` (torch.special's other name for it)."""
    return i0(input)


@public(functional=False)
def modified_bessel_i1(input):
    """I1(x), as :func:`i1`."""
    return i1(input)
