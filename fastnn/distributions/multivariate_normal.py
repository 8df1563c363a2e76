"""``MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)``: the
Gaussian with covariance ``L @ L.mT``.

As torch's, a covariance is factored with ``fnn.linalg.cholesky`` and a precision ``P``
through the Cholesky factor of ``P`` flipped (torch's ``_precision_to_scale_tril``). The
triangular solves that the density needs are a forward substitution written with fastnn's
ops (one row per step), so gradients reach ``loc`` and the matrix through them on any
device.
"""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn.distributions import constraints
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.utils import lazy_property, standard_normal
from fastnn.ops.tensor import Tensor

__all__ = ["MultivariateNormal"]


def tril_inverse(tril: Tensor) -> Tensor:
    """The inverse of lower-triangular matrices (the last two dims), by forward
    substitution: row i of the inverse is ``(e_i - L[i, :i] @ rows[:i]) / L[i, i]``."""
    n = tril.shape[-1]
    eye = fnn.eye(n, dtype=tril.dtype, device=tril.device)
    rows = []
    for i in range(n):
        row = eye[i]
        if i:
            done = fnn.stack(rows, -2)
            row = row - (tril[..., i:i + 1, :i] @ done).squeeze(-2)
        rows.append(row / tril[..., i, i:i + 1])
    return fnn.stack(rows, -2)


def batch_mahalanobis(tril_inv: Tensor, diff: Tensor) -> Tensor:
    """``|L^-1 diff|^2`` over the last dim, the batch dims broadcast, in L's dtype: PyTorch's
    triangular solve reads diff in L's dtype (a float32 law scores a float64 value)."""
    return (tril_inv @ diff.to(tril_inv.dtype).unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def half_log_det(tril: Tensor) -> Tensor:
    """``log det(L)`` = half the log determinant of ``L @ L.mT``."""
    return fnn.diagonal(tril, 0, -2, -1).log().sum(-1)


def precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower-triangular L with ``L @ L.mT = inverse(precision)``: the Cholesky factor
    of the flipped precision, flipped back and transposed, is L's inverse."""
    flipped = fnn.linalg.cholesky(fnn.flip(precision, (-2, -1)))
    return tril_inverse(fnn.flip(flipped, (-2, -1)).mT)


class MultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` (event shape ``(n,)``) and covariance
    ``scale_tril @ scale_tril.mT``; ``rsample`` is ``loc + L @ eps``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                ("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix))
                            if m is not None)
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        batch_shape = fnn.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = fnn.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        """This distribution with loc and scale_tril expanded to ``batch_shape``."""
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = as_size(batch_shape)
        event = tuple(self.event_shape)
        new.loc = self.loc.expand(tuple(batch_shape) + event)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("scale_tril", "covariance_matrix", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(tuple(batch_shape) + event * 2))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def _scale_tril_inverse(self):
        return tril_inverse(self._unbroadcasted_scale_tril)

    @lazy_property
    def scale_tril(self):
        """``L``, the lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        """``L @ L.mT``."""
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """The inverse covariance ``L^-T @ L^-1``."""
        inverse = self._scale_tril_inverse
        return (inverse.mT @ inverse).expand(self._matrix_shape())

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """The diagonal of the covariance."""
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    def rsample(self, sample_shape=()):
        """``loc + L @ eps`` with ``eps ~ N(0, I)``."""
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        """``-(n log(2 pi) + |L^-1 (value - loc)|^2) / 2 - log det L``."""
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = batch_mahalanobis(self._scale_tril_inverse, value - self.loc)
        return (-0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis)
                - half_log_det(self._unbroadcasted_scale_tril))

    def entropy(self):
        """``n (1 + log(2 pi)) / 2 + log det L``."""
        entropy = (0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi))
                   + half_log_det(self._unbroadcasted_scale_tril))
        return entropy if not self._batch_shape else entropy.expand(self._batch_shape)
