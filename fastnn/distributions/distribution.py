"""``Distribution``: the base class of fastnn's distributions, as PyTorch's.

A distribution has a ``batch_shape`` (independent, differently parameterised copies) and
an ``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. Validation is on by default, as PyTorch's
(``python -O`` turns it off): bad parameters raise ``ValueError`` at construction, and
values outside the support raise in ``log_prob``/``cdf``.
"""

from __future__ import annotations

import warnings

from fastnn.autograd.grad_mode import no_grad
from fastnn.distributions import constraints
from fastnn.distributions.utils import lazy_property, shown
from fastnn.ops.tensor import Tensor
from fastnn.settings import Size

__all__ = ["Distribution"]


def _all_true(valid) -> bool:
    return bool(valid.all().item())


def as_size(shape) -> Size:
    """``shape`` (an int, a tuple, a list or a Size) as a :class:`fastnn.Size`."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        return Size((shape,))
    try:
        return Size(tuple(int(s) for s in shape))
    except TypeError as err:
        raise TypeError(f"expected a shape (a tuple of ints), got {shape!r}") from err


class Distribution:
    """The base class of probability distributions: ``batch_shape``, ``event_shape``,
    ``sample``/``rsample``, ``log_prob``, ``entropy``, moments, ``expand``; subclasses
    declare ``arg_constraints`` and ``support``."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made from now on without
        ``validate_args=`` (on by default, off under ``python -O``)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{type(self)} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked on its own
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # not given: computed from a parameter that was checked
                value = getattr(self, param)
                if not _all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (views, no copies) to
        ``batch_shape``; arguments are not validated again."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one draw, without batching."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """Parameter name -> :class:`~fastnn.distributions.constraints.Constraint`."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint every value of the distribution satisfies."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode, of shape batch_shape + event_shape."""
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: ``variance.sqrt()``."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """``sample_shape`` draws (no gradient), of shape
        ``sample_shape + batch_shape + event_shape``."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Reparameterised draws: gradients reach the parameters."""
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution, along dim 0."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, of shape batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size(tuple(as_size(sample_shape)) + tuple(self._batch_shape)
                    + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        """Raise ValueError unless ``value`` broadcasts with batch_shape + event_shape and
        lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{Size(value.shape)!r} vs {self._event_shape!r}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{Size(actual)!r} vs {Size(expected)!r}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not _all_true(support.check(value)):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        values = [self.__dict__[p] for p in names]
        args = ", ".join(f"{p}: {shown(v) if v.numel() == 1 else repr(Size(v.shape))}"
                         for p, v in zip(names, values))
        return f"{type(self).__name__}({args})"
