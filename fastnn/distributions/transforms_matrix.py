"""The matrix transforms of ``torch.distributions.transforms`` (``LowerCholeskyTransform``,
``PositiveDefiniteTransform``, ``CorrCholeskyTransform``) and the functors applying
transforms to slices (``CatTransform``, ``StackTransform``), composed from fastnn's
tensor ops."""

from __future__ import annotations

import math

import fastnn as fnn
from fastnn import functional as F
from fastnn.distributions import constraints
from fastnn.distributions.transforms_base import Transform
from fastnn.distributions.utils import (
    lazy_property,
    sum_rightmost,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)
from fastnn.settings import Size

__all__ = ["CatTransform", "CorrCholeskyTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "StackTransform"]


def _diagonal(x):
    return fnn.diagonal(x, 0, -2, -1)


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal:
    the strict lower triangle is kept and the diagonal exponentiated (not bijective)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + fnn.diag_embed(_diagonal(x).exp())

    def _inverse(self, y):
        return y.tril(-1) + fnn.diag_embed(_diagonal(y).log())


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive-definite ones: ``L @ L.mT`` with ``L``
    the :class:`LowerCholeskyTransform` of the input (not bijective)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(fnn.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of ``D (D - 1) / 2`` entries to Cholesky factors of ``D x D``
    correlation matrices: ``tanh`` into (-1, 1), laid out row by row below the diagonal,
    then a signed stick breaking gives each row unit norm (as Stan's)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = fnn.finfo(x.dtype).eps
        x = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        # y = sign(r) sqrt(z * prod(1 - z before)) = r sqrt(prod(1 - z before)), z = r**2
        z1m_cumprod_sqrt = (1 - r.pow(2)).sqrt().cumprod(-1)
        r = r + fnn.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], (1, 0), value=1.0)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """``log |det|`` of the map from ``x`` to the flattened strict lower triangle of
        ``y`` (the two spaces differ in dimension, as PyTorch's)."""
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        # diag=-2 needs no shift of the cumulative products (2 x 2 too)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        shape = tuple(shape)
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(shape[:-1] + (d, d))

    def inverse_shape(self, shape):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(shape[:-2] + (d * (d - 1) // 2,))


def _check_transforms(tseq):
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")


def _check_axis(what, tensor, dim, size, expected):
    if not -tensor.dim() <= dim < tensor.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {tensor.dim()} "
                             "dimensions")
    if tensor.shape[dim] != size:
        raise AssertionError(f"{what}.size({dim}) = {tensor.shape[dim]} must equal {expected} "
                             f"{size}")


class CatTransform(Transform):
    """The transforms of ``tseq`` applied to consecutive slices of ``lengths`` (1 each by
    default) along ``dim``, joined again as ``fnn.cat``."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        _check_transforms(tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        """The widest event dim of the parts."""
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        """The total length along ``dim``."""
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, z, what, inverse):
        _check_axis(what, z, self.dim, self.length, "length")
        slices, start = [], 0
        for transform, length in zip(self.transforms, self.lengths):
            part = z.narrow(self.dim, start, length)
            slices.append(transform.inv(part) if inverse else transform(part))
            start = start + length
        return fnn.cat(slices, self.dim)

    def _call(self, x):
        return self._map(x, "x", False)

    def _inverse(self, y):
        return self._map(y, "y", True)

    def log_abs_det_jacobian(self, x, y):
        _check_axis("x", x, self.dim, self.length, "length")
        _check_axis("y", y, self.dim, self.length, "length")
        terms, start = [], 0
        for transform, length in zip(self.transforms, self.lengths):
            term = transform.log_abs_det_jacobian(x.narrow(self.dim, start, length),
                                                  y.narrow(self.dim, start, length))
            if transform.event_dim < self.event_dim:
                term = sum_rightmost(term, self.event_dim - transform.event_dim)
            terms.append(term)
            start = start + length
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        if dim < 0:  # the joined dim is a batch dim: join the log-Jacobians along it
            return fnn.cat(terms, dim)
        return sum(terms)  # it is inside the event: add them

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms of ``tseq`` applied to the slices along ``dim`` (one each), stacked
    again as ``fnn.stack``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        _check_transforms(tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _map(self, z, what, inverse):
        _check_axis(what, z, self.dim, len(self.transforms), "len(transforms)")
        return fnn.stack([t.inv(part) if inverse else t(part)
                          for part, t in zip(self._slice(z), self.transforms)], self.dim)

    def _call(self, x):
        return self._map(x, "x", False)

    def _inverse(self, y):
        return self._map(y, "y", True)

    def log_abs_det_jacobian(self, x, y):
        _check_axis("x", x, self.dim, len(self.transforms), "len(transforms)")
        _check_axis("y", y, self.dim, len(self.transforms), "len(transforms)")
        return fnn.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                          zip(self._slice(x), self._slice(y), self.transforms)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
