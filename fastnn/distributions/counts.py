"""The count distributions ``Poisson(rate)``, ``Geometric(probs=None, logits=None)`` and
``Binomial(total_count=1, probs=None, logits=None)``, as PyTorch's: draws carry no
gradient; ``log_prob``, the moments and ``entropy`` do."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn import functional as F
from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.bernoulli import BinaryParams
from fastnn.distributions.distribution import Distribution, as_size
from fastnn.distributions.exp_family import ExponentialFamily
from fastnn.distributions.utils import (
    broadcast_all,
    is_number,
    standard_uniform,
)
from fastnn.ops.rng_state import rng_of

__all__ = ["Binomial", "Geometric", "Poisson"]


class Poisson(ExponentialFamily):
    """The Poisson distribution: mass ``rate**k exp(-rate) / k!`` for k = 0, 1, ..."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if is_number(rate) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with rate expanded to ``batch_shape``."""
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = as_size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``rate``."""
        return self.rate

    @property
    def mode(self):
        """``floor(rate)``."""
        return self.rate.floor()

    @property
    def variance(self):
        """``rate``."""
        return self.rate

    def sample(self, sample_shape=()):
        """Counts in the rate's dtype (no gradient)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return fnn.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        """``value log(rate) - rate - lgamma(value + 1)``."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return fnn.xlogy(value, rate) - rate - fnn.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()


class _ProbsOrLogits(BinaryParams):
    """Geometric's and Binomial's parameters (Bernoulli's), expanded with a total count."""

    def _expand_params(self, new, batch_shape):
        for name in ("probs", "logits", "total_count"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Geometric(_ProbsOrLogits):
    """The number of failures before the first success of Bernoulli(probs) trials: mass
    ``(1 - p)**k p`` for k = 0, 1, ..."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        super().__init__(() if is_number(given) else param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0  # beyond unit_interval: probs = 0 never succeeds
            if not bool(valid.all().item()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive "
                    f"but found invalid values:\n{self.probs[~valid]}")

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(Geometric, _instance)
        return self._expand_params(new, as_size(batch_shape))

    @property
    def mean(self):
        """``1 / p - 1``."""
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        """0."""
        return fnn.zeros_like(self.probs)

    @property
    def variance(self):
        """``(1 / p - 1) / p``."""
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        """``floor(log(u) / log1p(-p))`` with ``u`` uniform on (0, 1) (no gradient)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            u = standard_uniform(shape, self.probs.dtype, self.probs.device)
            u = u.clamp(min=fnn.finfo(self.probs.dtype).tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        """``value log1p(-p) + log(p)`` (0 at p = 1, value = 0)."""
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        certain = (probs == 1) & (value == 0)
        probs = fnn.where(certain, fnn.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        """``BCE(logits, p) / p``."""
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


def _clamp_by_zero(x):
    """``max(x, 0)`` with gradient 1/2 at 0, as PyTorch's."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_ProbsOrLogits):
    """The number of successes in ``total_count`` Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        total_count, param = broadcast_all(total_count, given)
        self.total_count = total_count.to(param.dtype)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Binomial, _instance)
        return self._expand_params(new, as_size(batch_shape))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        """The integers in [0, total_count]."""
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        """``total_count p``."""
        return self.total_count * self.probs

    @property
    def mode(self):
        """``min(floor((total_count + 1) p), total_count)``."""
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        """``total_count p (1 - p)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Counts in the parameter's dtype (no gradient)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            count = np.broadcast_to(self.total_count.detach().numpy(), shape).astype(np.int64)
            probs = np.broadcast_to(self.probs.detach().numpy().astype(np.float64), shape)
            draws = rng_of("binomial", None).binomial(count, probs)
            return fnn.tensor(draws, dtype=self._param.dtype, device=self._param.device)

    def log_prob(self, value):
        """``value logits - n max(logits, 0) - n log1p(exp(-|logits|))`` plus the log of
        the binomial coefficient (stable for any logits)."""
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        normalize = (n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p()
                     - fnn.lgamma(n + 1))
        return (value * logits - normalize - fnn.lgamma(value + 1)
                - fnn.lgamma(n - value + 1))

    def _homogeneous_count(self, method):
        count = int(self.total_count.max().item())
        if not self.total_count.min().item() == count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by "
                                      f"`{method}`.")
        return count

    def entropy(self):
        """``-sum_k p(k) log p(k)`` over the support (one total_count for the batch)."""
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        """``0, ..., total_count`` along dim 0 (one total_count for the batch)."""
        count = self._homogeneous_count("enumerate_support")
        values = fnn.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
