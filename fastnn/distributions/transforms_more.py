"""More transforms of ``torch.distributions.transforms``: ``identity_transform``,
``IndependentTransform``, ``ReshapeTransform``, ``PowerTransform``, ``SoftplusTransform``,
``SoftmaxTransform``, ``StickBreakingTransform`` and ``CumulativeDistributionTransform``,
composed from fastnn's tensor ops (gradients flow through the maps and their
log-Jacobians). The matrix transforms and the cat/stack functors are in
:mod:`fastnn.distributions.transforms_matrix`; all are exported by ``transforms``.
"""

from __future__ import annotations

import fastnn as fnn
from fastnn import functional as F
from fastnn.distributions import constraints
from fastnn.distributions.distribution import as_size
from fastnn.distributions.transforms_base import ComposeTransform, Transform
from fastnn.distributions.utils import broadcast_all, lazy_property, sum_rightmost
from fastnn.settings import Size

__all__ = ["CumulativeDistributionTransform", "IndependentTransform", "PowerTransform",
           "ReshapeTransform", "SoftmaxTransform", "SoftplusTransform",
           "StickBreakingTransform", "identity_transform"]

identity_transform = ComposeTransform([])
"""The identity map (an empty :class:`ComposeTransform`), as PyTorch's."""


def clipped_sigmoid(x):
    """``sigmoid(x)`` clamped into [tiny, 1 - eps] of the dtype."""
    info = fnn.finfo(x.dtype)
    return x.sigmoid().clamp(min=info.tiny, max=1.0 - info.eps)


def _at_least_one_dim(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims taken as
    one event: the map is the base's, and ``log_abs_det_jacobian`` sums over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        if not isinstance(base_transform, Transform):
            raise TypeError(f"IndependentTransform: base_transform must be a Transform, got "
                            f"{type(base_transform).__name__}")
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(result, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return (f"{type(self).__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dims into ``out_shape`` (same number of
    elements); the log-Jacobian is 0."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = as_size(in_shape)
        self.out_shape = as_size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    @staticmethod
    def _swap(shape, old, new):
        shape = tuple(shape)
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != tuple(old):
            raise ValueError(f"Shape mismatch: expected {Size(shape[cut:])!r} but got {old!r}")
        return Size(shape[:cut] + tuple(new))

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape)


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals (``exponent`` a number or a tensor)."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        """The sign of ``exponent`` (a tensor)."""
        return self.exponent.sign()

    def __eq__(self, other):
        if not isinstance(other, PowerTransform):
            return False
        return bool((self.exponent == other.exponent).all().item())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return fnn.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    inverse_shape = forward_shape


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (linear above 20); the inverse is ``log(expm1(y))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex: ``exp`` then normalised over the last dim
    (not bijective; the inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        return _at_least_one_dim(shape)

    def inverse_shape(self, shape):
        return _at_least_one_dim(shape)


class StickBreakingTransform(Transform):
    """Unconstrained vectors of K - 1 entries to the K-simplex by stick breaking: each
    logit (shifted by ``log`` of the entries left) takes a sigmoid fraction of the stick
    left; bijective."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _offset(x, size):
        return size - x.new_ones(x.shape[-1]).cumsum(-1)  # size - 1, size - 2, ...

    def _call(self, x):
        z = clipped_sigmoid(x - self._offset(x, x.shape[-1] + 1).log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, (0, 1), value=1.0) * F.pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = self._offset(y_crop, y.shape[-1])
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=fnn.finfo(y.dtype).tiny)
        return y_crop.log() - remaining.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x, x.shape[-1] + 1).log()
        # 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        shape = tuple(_at_least_one_dim(shape))
        return Size(shape[:-1] + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        shape = tuple(_at_least_one_dim(shape))
        return Size(shape[:-1] + (shape[-1] - 1,))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, into the unit interval; the inverse is the icdf and
    the log-Jacobian the log density (a Gaussian copula from a multivariate normal)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The distribution's support."""
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
