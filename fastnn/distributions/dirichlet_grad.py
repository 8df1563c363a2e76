"""The reparameterised gradient of Dirichlet (and Beta) draws, as PyTorch's
``_dirichlet_grad``: for a draw ``x`` of Dirichlet(alpha) with ``total = sum alpha``,
``dx_j / dalpha_i = g_i (delta_ij - x_j)`` with ``g_i`` the scaled implicit derivative
``-(dF/dalpha) / f / (1 - x)`` of the marginal Beta(alpha_i, total - alpha_i) at ``x_i``,
approximated as PyTorch approximates it (Taylor series near 0 and 1, a saddle-point
expansion when both Beta parameters exceed 6, a rational correction elsewhere)."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.distributions.special_host import piecewise

__all__ = ["attach_dirichlet_grad", "dirichlet_grad"]

# PyTorch's rational correction: p (index 0) and q (index 1), by powers of u, a and b
_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1.0, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _nan_to_zero(value):
    return fnn.where(value != value, fnn.zeros_like(value), value)


def _alpha_small(x, alpha, beta):
    """x near 0: the Taylor series of the Beta cdf's alpha-derivative."""
    factor = fnn.digamma(alpha) - fnn.digamma(alpha + beta) - x.log()
    numer = fnn.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * (i - beta) * x / i
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    return _nan_to_zero(x * (1 - x) ** (-beta) * series)


def _beta_small(x, alpha, beta):
    """x near 0: the Taylor series of the Beta cdf's beta-derivative."""
    factor = fnn.digamma(alpha + beta) - fnn.digamma(beta)
    numer, betas, dbetas = fnn.ones_like(x), fnn.ones_like(x), fnn.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    return _nan_to_zero(-(1 - x) ** (1 - beta) * series)


def _alpha_mid(x, alpha, beta):
    """alpha, beta > 6: Rice's saddle-point expansion (a polynomial near the mean)."""
    total = alpha + beta
    mean = alpha / total
    std = (alpha * beta / (total + 1)).sqrt() / total
    b2 = beta * beta
    poly = 47 * x * b2 * b2 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * b2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha ** 3 * b2 * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / (2 * alpha * beta / total).sqrt()
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * b2))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * b2
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / ((2 * alpha / beta).sqrt() * total ** 1.5 * axbx * axbx)
    term2 = 0.5 * (alpha / (total * x)).log()
    term3 = (8 * alpha * beta / total).sqrt() / (beta * x + alpha * (x - 1))
    term4 = (beta * (beta / (total * (1 - x))).log()
             + alpha * (alpha / (total * x)).log()) ** -1.5
    term1234 = term1 + term2 * (term3 + fnn.where(x < mean, term4, -term4))
    far = stirling * prefactor * term1234
    return fnn.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def _rational(x, alpha, total):
    """Elsewhere: a rational correction to ``x (digamma(total) - digamma(alpha)) /
    beta``."""
    u = x.log()
    a = alpha.log() - u
    b = total.log() - a
    powers_u, powers_a = (1.0, u, u * u), (1.0, a, a * a)
    sums = []
    for table in _C:
        total_sum = 0.0
        for i in range(3):
            for j in range(3):
                c = table[i][j]
                total_sum = total_sum + powers_u[i] * powers_a[j] * (
                    c[0] + b * (c[1] + b * (c[2] + b * c[3])))
        sums.append(total_sum)
    approx = x * (fnn.digamma(total) - fnn.digamma(alpha)) / (total - alpha)
    return sums[0] / sums[1] * approx


def dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad(x, alpha, total)``: the scaled implicit derivative of a
    draw ``x`` of Beta(alpha, total - alpha), elementwise. Computed in float64 on the host,
    returned in ``x``'s dtype and device; no gradient."""
    x64, a64, t64 = np.broadcast_arrays(*(np.asarray(v.detach().numpy(), np.float64)
                                          for v in (x, alpha, total)))
    boundary = t64 * x64 * (1 - x64)
    return piecewise((x64, a64, t64), [
        ((x64 <= 0.5) & (boundary < 2.5), lambda x, a, t: _alpha_small(x, a, t - a)),
        ((x64 >= 0.5) & (boundary < 0.75), lambda x, a, t: -_beta_small(1 - x, t - a, a)),
        ((a64 > 6) & (t64 - a64 > 6), lambda x, a, t: _alpha_mid(x, a, t - a)),
        (True, _rational)], x)


def attach_dirichlet_grad(draws, concentration):
    """``draws`` (Dirichlet(concentration) draws, no gradient, the last dim the event)
    with PyTorch's pathwise gradient to ``concentration``: ``dx_j / dalpha_i =
    g_i (delta_ij - x_j)``."""
    if not (concentration.requires_grad and fnn.is_grad_enabled()):
        return draws
    plain = concentration.detach()
    total = plain.sum(-1, keepdim=True).expand(plain.shape)
    slope = dirichlet_grad(draws, plain, total)
    shift = slope * (concentration - plain)  # zero, carrying g_i to alpha_i
    return draws + shift - draws * shift.sum(-1, keepdim=True)
