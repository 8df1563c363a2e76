"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: the Gaussian with covariance
``W @ W.mT + diag(D)`` for a ``n x m`` factor ``W`` (m small), as PyTorch's.

The density needs only the Cholesky factor of the ``m x m`` capacitance
``C = I + W.mT @ D^-1 @ W``: the Woodbury identity gives the Mahalanobis term and the
matrix determinant lemma ``log det(W W^T + D) = log det C + sum log D`` the normaliser.
Composed from fastnn's ops (``fnn.linalg.cholesky``, a forward substitution), so
gradients reach all three parameters. Importing this module registers the KL
divergences with itself and with :class:`MultivariateNormal`.
"""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.kl import register_kl
from fastnn.distributions.multivariate_normal import (
    MultivariateNormal,
    batch_mahalanobis,
    half_log_det,
    tril_inverse,
)
from fastnn.distributions.utils import lazy_property, standard_normal

__all__ = ["LowRankMultivariateNormal"]


def _add_identity(matrix):
    n = matrix.shape[-1]
    return matrix + fnn.eye(n, dtype=matrix.dtype, device=matrix.device)


def _batch_mv(matrix, vector):
    return (matrix @ vector.unsqueeze(-1)).squeeze(-1)


def capacitance_tril(cov_factor, cov_diag):
    """The Cholesky factor of ``I + W.mT @ D^-1 @ W``."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    return fnn.linalg.cholesky(_add_identity(wt_dinv @ cov_factor))


def lowrank_logdet(cov_factor, cov_diag, cap_tril):
    """``log det(W W^T + D) = 2 log det(chol C) + sum log D`` (determinant lemma)."""
    return 2 * half_log_det(cap_tril) + cov_diag.log().sum(-1)


def lowrank_mahalanobis(cov_factor, cov_diag, x, cap_tril):
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity:
    ``x^T D^-1 x - |chol(C)^-1 W^T D^-1 x|^2``."""
    wt_dinv_x = _batch_mv(cov_factor.mT / cov_diag.unsqueeze(-2), x)
    return (x.pow(2) / cov_diag).sum(-1) - batch_mahalanobis(tril_inverse(cap_tril), wt_dinv_x)


def _trace_xxt(matrix):
    return matrix.pow(2).sum((-2, -1))


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` (event shape ``(n,)``) and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``; ``cov_factor`` is ``(..., n, m)``
    and ``cov_diag`` ``(..., n)``, batch dims broadcast."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape "
                             f"{as_size(event_shape)!r}")
        try:
            loc_, self.cov_factor, cov_diag_ = fnn.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as err:
            raise ValueError(f"Incompatible batch shapes: loc {as_size(loc.shape)!r}, "
                             f"cov_factor {as_size(cov_factor.shape)!r}, cov_diag "
                             f"{as_size(cov_diag.shape)!r}") from err
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        # validated before the factorisation, so a bad cov_diag raises ValueError
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = as_size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                       validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @lazy_property
    def variance(self):
        """The diagonal of the covariance: ``sum(W**2, -1) + D``."""
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
                ).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        """The Cholesky factor of the covariance, as
        ``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)`` (well conditioned)."""
        sqrt_diag = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / sqrt_diag
        tril = sqrt_diag * fnn.linalg.cholesky(_add_identity(scaled @ scaled.mT))
        return tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        """``W @ W.mT + diag(D)``."""
        factor = self._unbroadcasted_cov_factor
        return (factor @ factor.mT + fnn.diag_embed(self._unbroadcasted_cov_diag)).expand(
            self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """The inverse covariance by the Woodbury identity:
        ``D^-1 - A.mT @ A`` with ``A = chol(C)^-1 W^T D^-1``."""
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = tril_inverse(self._capacitance_tril) @ wt_dinv
        precision = fnn.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        """``loc + W @ eps_W + sqrt(D) * eps_D`` with standard normal ``eps_W`` (m
        entries) and ``eps_D`` (n entries)."""
        shape = tuple(self._extended_shape(sample_shape))
        dtype, device = self.loc.dtype, self.loc.device
        eps_w = standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), dtype, device)
        eps_d = standard_normal(shape, dtype, device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self):
        return lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                              self._capacitance_tril)

    def log_prob(self, value):
        """``-(n log(2 pi) + log det(cov) + mahalanobis) / 2``."""
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                          self._unbroadcasted_cov_diag, value - self.loc,
                                          self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det()
                       + mahalanobis)

    def entropy(self):
        """``(n (1 + log(2 pi)) + log det(cov)) / 2``."""
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi))
                         + self._log_det())
        return entropy if not self._batch_shape else entropy.expand(self._batch_shape)


def _same_events(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes "
                         "cannot be computed")


def _woodbury_a(q):
    """``chol(C_q)^-1 W_q^T D_q^-1`` (precision = D_q^-1 - A^T A)."""
    qwt_qdinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return tril_inverse(q._capacitance_tril) @ qwt_qdinv


def _q_mahalanobis(q, p):
    return lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                               q.loc - p.loc, q._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _same_events(p, q, "Low Rank Multivariate Normals")
    term1 = q._log_det() - p._log_det()
    a = _woodbury_a(q)
    p_diag, q_diag = p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    term21 = (p_diag / q_diag).sum(-1)
    term22 = _trace_xxt(p._unbroadcasted_cov_factor * q_diag.rsqrt().unsqueeze(-1))
    term23 = _trace_xxt(a * p_diag.sqrt().unsqueeze(-2))
    term24 = _trace_xxt(a @ p._unbroadcasted_cov_factor)
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + _q_mahalanobis(q, p) - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _same_events(p, q, "(Low Rank) Multivariate Normals")
    p_tril = p._unbroadcasted_scale_tril
    term1 = q._log_det() - 2 * half_log_det(p_tril)
    a = _woodbury_a(q)
    term21 = _trace_xxt(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _trace_xxt(a @ p_tril)
    return 0.5 * (term1 + term21 - term22 + _q_mahalanobis(q, p) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _same_events(p, q, "(Low Rank) Multivariate Normals")
    q_tril = q._unbroadcasted_scale_tril
    q_inverse = tril_inverse(q_tril)
    term1 = 2 * half_log_det(q_tril) - p._log_det()
    term3 = batch_mahalanobis(q_inverse, q.loc - p.loc)
    term21 = _trace_xxt(q_inverse @ p._unbroadcasted_cov_factor)
    term22 = _trace_xxt(q_inverse * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])
