"""``Wishart(df, covariance_matrix= | precision_matrix= | scale_tril=)``: the law of
``sum_i x_i x_i^T`` for ``df`` draws ``x_i ~ N(0, Sigma)`` (real ``df > p - 1``), over
``p x p`` positive-definite matrices, as PyTorch's.

Draws use the Bartlett decomposition ``L A A^T L^T`` (``A`` lower-triangular, chi
variables of ``df - i`` degrees on its diagonal and standard normals below), so they are
reparameterised through fastnn's Chi2 (the implicit gradient of the Gamma draws) and the
factor ``L``. A draw that is not positive-definite (possible for ``p - 1 < df < p``) is
drawn again, up to ``max_try_correction`` times, with a warning.
"""

from __future__ import annotations

import math
import warnings

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.gamma import Chi2
from fastnn.distributions.multivariate_normal import half_log_det, precision_to_scale_tril
from fastnn.distributions.utils import is_number, lazy_property, standard_normal, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def mvdigamma(x, p: int):
    """The multivariate digamma: ``sum_i digamma(x - i / 2)`` for i < p."""
    if not bool((x > (p - 1) / 2).all().item()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = fnn.arange(p, dtype=x.dtype, device=x.device) / 2
    return fnn.digamma(x.unsqueeze(-1) - offsets).sum(-1)


def _trace(matrix):
    return fnn.diagonal(matrix, 0, -2, -1).sum(-1)


def cholesky_solve(b, tril):
    """``(L @ L.mT)^-1 @ b`` (``torch.cholesky_solve(b, L)``): solved with the product, so
    that, as PyTorch's, the gradient reaches every entry of ``L``, not only its lower
    triangle."""
    return fnn.linalg.solve(tril @ tril.mT, b)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom and scale matrix
    ``Sigma`` given by exactly one of ``covariance_matrix``, ``precision_matrix``
    (``Sigma^-1``) or ``scale_tril`` (its Cholesky factor, the most efficient)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        """The matrix constraints and ``df > p - 1``."""
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if is_number(df):
            batch_shape = as_size(param.shape[:-2])
            self.df = fnn.tensor(float(df), dtype=param.dtype,
                                 device=param.device).expand(batch_shape)
        else:
            batch_shape = as_size(fnn.broadcast_shapes(tuple(param.shape[:-2]),
                                                       tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any().item()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(tuple(batch_shape) + (-1, -1)))
        if bool((self.df < p).any().item()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = fnn.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(param)
        self._dist_chi2 = self._chi2()

    def _chi2(self):
        """The Chi2 laws of the squared Bartlett diagonal: ``df - i`` degrees, i < p."""
        tril = self._unbroadcasted_scale_tril
        offsets = fnn.arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(self._batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = as_size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2()
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        """The Cholesky factor ``L`` of the scale matrix."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        """The scale matrix ``L @ L.mT``."""
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """The inverse scale matrix ``(L @ L.mT)^-1``."""
        tril = self._unbroadcasted_scale_tril
        identity = fnn.eye(tril.shape[-1], dtype=tril.dtype, device=tril.device)
        return cholesky_solve(identity, tril).expand(self._matrix_shape())

    def _df_matrix(self, df):
        return df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        """``df * Sigma``."""
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        """``(df - p - 1) Sigma``, NaN where ``df <= p + 1``."""
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = fnn.where(factor <= 0, fnn.full_like(factor, math.nan), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        """``df (Sigma_ij**2 + Sigma_ii Sigma_jj)``."""
        cov = self.covariance_matrix
        diag = fnn.diagonal(cov, 0, -2, -1)
        return self._df_matrix(self.df) * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        eps = fnn.finfo(self._unbroadcasted_scale_tril.dtype).eps
        chi = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        tril = self._unbroadcasted_scale_tril
        below = standard_normal(tuple(as_size(sample_shape)) + tuple(self._batch_shape)
                                + (p * (p - 1) // 2,), tril.dtype, tril.device)
        noise = fnn.diag_embed(chi) + vec_to_tril_matrix(below, diag=-1)
        chol = tril @ noise
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws of shape ``sample_shape + batch_shape + (p, p)``; a draw that is
        not positive-definite is redrawn (up to ``max_try_correction``, 10 by default,
        times; a warning says so), and may remain singular (``log_prob`` -inf there)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any().item()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = fnn.where(is_singular.unsqueeze(-1).unsqueeze(-1), fresh, sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any().item()):
                    break
        return sample

    def _log_normalizer_terms(self):
        p = self._event_shape[-1]
        return p * _LOG_2 / 2 + half_log_det(self._unbroadcasted_scale_tril)

    def log_prob(self, value):
        """``(df - p - 1)/2 log det X - tr(Sigma^-1 X)/2 - df (p log 2 / 2 + log det L)
        - log Gamma_p(df / 2)``."""
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        trace = _trace(cholesky_solve(value, self._unbroadcasted_scale_tril))
        return (-nu * self._log_normalizer_terms() - fnn.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * fnn.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        """The closed form: ``(p + 1)(p log 2 / 2 + log det L) + log Gamma_p(df / 2)
        - (df - p - 1)/2 psi_p(df / 2) + df p / 2``."""
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * self._log_normalizer_terms() + fnn.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-fnn.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + fnn.mvlgamma(y + (p + 1) / 2, p=p))
