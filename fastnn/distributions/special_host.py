"""Special functions the distributions need that fastnn has no op for, computed on the
host in float64 (as Cephes' ``igam``/``igamc``) with their gradient attached where
PyTorch has one."""

from __future__ import annotations

import math

import numpy as np

import fastnn as fnn
from fastnn.autograd.grad_mode import no_grad

__all__ = ["piecewise", "regularized_gamma"]

_EPS = np.finfo(np.float64).eps
_BIG = 4503599627370496.0
_ITERATIONS = 2000
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _lower_series(a, x):
    """P(a, x) by the power series (converges fast where x < a + 1)."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    r = a.copy()
    for _ in range(_ITERATIONS):
        r = r + 1
        term = term * x / r
        total = total + term
        if np.all(term <= total * _EPS):
            break
    return total * np.exp(a * np.log(x) - x - _lgamma(a)) / a


def _upper_fraction(a, x):
    """Q(a, x) = 1 - P(a, x) by the continued fraction (for x > a + 1)."""
    y = 1 - a
    z = x + y + 1
    c = np.zeros_like(x)
    pkm2, qkm2 = np.ones_like(x), x.copy()
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    for _ in range(_ITERATIONS):
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        ratio = np.where(qk != 0, pk / np.where(qk != 0, qk, 1), ans)
        change = np.abs((ans - ratio) / np.where(ratio != 0, ratio, 1))
        ans = ratio
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        big = np.abs(pk) > _BIG
        pkm2, pkm1 = np.where(big, pkm2 / _BIG, pkm2), np.where(big, pkm1 / _BIG, pkm1)
        qkm2, qkm1 = np.where(big, qkm2 / _BIG, qkm2), np.where(big, qkm1 / _BIG, qkm1)
        if np.all(change <= _EPS):
            break
    return ans * np.exp(a * np.log(x) - x - _lgamma(a))


def _gammainc(a, x):
    """P(a, x) for float64 arrays (a > 0; 0 for x <= 0, 1 at x = inf)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    series = (x > 0) & ((x <= 1) | (x <= a))
    fraction = (x > 0) & ~series & np.isfinite(x)
    if series.any():
        out[series] = _lower_series(a[series], x[series])
    if fraction.any():
        out[fraction] = 1 - _upper_fraction(a[fraction], x[fraction])
    out[x == np.inf] = 1.0
    out[np.isnan(a) | np.isnan(x)] = np.nan
    return out


def piecewise(arrays, cases, like):
    """``fn(*arrays)`` evaluated, for each ``(mask, fn)`` of ``cases`` in turn, only on the
    elements whose mask holds first (``fn`` takes and returns float64 fastnn tensors; the
    last mask should hold everywhere); returned in ``like``'s dtype and device, no
    gradient. Each branch sees only its own elements, so none pays for (or overflows on)
    the others'."""
    arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in arrays))
    out = np.zeros(arrays[0].shape)
    remaining = np.ones(out.shape, bool)
    with no_grad(), np.errstate(all="ignore"):
        for mask, fn in cases:
            take = remaining & mask
            if take.any():
                out[take] = fn(*(fnn.tensor(a[take]) for a in arrays)).numpy()
            remaining &= ~take
    return fnn.tensor(out, dtype=like.dtype, device=like.device)


def regularized_gamma(a, x):
    """The regularised lower incomplete gamma ``P(a, x)`` (``torch.special.gammainc``):
    the gradient reaches ``x`` (the density ``x**(a-1) exp(-x) / Gamma(a)``); as
    PyTorch's, none reaches ``a``."""
    a, x = fnn.broadcast_tensors(a, x)
    with no_grad():
        value = _gammainc(a.detach().numpy(), x.detach().numpy())
        value = fnn.tensor(value, dtype=x.dtype, device=x.device)
    if not (x.requires_grad and fnn.is_grad_enabled()):
        return value
    with no_grad():
        a_plain, x_plain = a.detach(), x.detach()
        density = (fnn.xlogy(a_plain - 1, x_plain) - x_plain - fnn.lgamma(a_plain)).exp()
    return value + (x - x_plain) * density
