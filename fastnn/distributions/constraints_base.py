"""The common constraints of ``fastnn.distributions.constraints``: each has
``check(value)``, a bool tensor (one entry per event) saying where ``value`` satisfies it,
and PyTorch's ``repr`` (which the validation errors print)."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.distributions.utils import shown

__all__ = [
    "Constraint", "boolean", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval",
    "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "real", "real_vector", "simplex", "square", "symmetric",
    "unit_interval",
]


class Constraint:
    """A region of valid values: ``check(value)`` is a bool tensor of the batch shape
    (``event_dim`` rightmost dims of ``value`` make one event); ``is_discrete`` says
    whether the region is a discrete set."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """Where ``value`` lies in the region (bool tensor)."""
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (it cannot be
    checked on its own)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        return _Dependent(
            is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
            event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a dependent one (skipped by argument validation)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property of a distribution whose value is a constraint that depends on its
    parameters (``Uniform.support``); on the class it reads as a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its ``reinterpreted_batch_ndims`` rightmost batch dims
    taken into the event (all must hold)."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent: base_constraint must be a Constraint, got "
                            f"{type(base_constraint).__name__}")
        if isinstance(reinterpreted_batch_ndims, bool) or not isinstance(
                reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"independent: reinterpreted_batch_ndims must be an int >= 0, "
                             f"got {reinterpreted_batch_ndims!r}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        keep = result.dim() - self.reinterpreted_batch_ndims
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self):
        return (f"{type(self).__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _Boolean(Constraint):
    """{0, 1}."""

    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    """One-hot vectors (the last dim)."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


class _Bounded(Constraint):
    """A constraint with bounds, printed as PyTorch prints them."""

    def __init__(self, lower_bound=None, upper_bound=None):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def __repr__(self):
        bounds = [f"{n}={shown(getattr(self, n))}" for n in ("lower_bound", "upper_bound")
                  if getattr(self, n) is not None]
        return f"{type(self).__name__[1:]}({', '.join(bounds)})"


class _IntegerInterval(_Bounded):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    """Integers >= lower_bound."""

    is_discrete = True

    def __init__(self, lower_bound):
        super().__init__(lower_bound)

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Real(Constraint):
    """The real line (NaN excluded; infinities allowed)."""

    def check(self, value):
        return value == value  # NOTE: False only at NaN


class _GreaterThan(_Bounded):
    """Values > lower_bound."""

    def __init__(self, lower_bound):
        super().__init__(lower_bound)

    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(_Bounded):
    """Values >= lower_bound."""

    def __init__(self, lower_bound):
        super().__init__(lower_bound)

    def check(self, value):
        return value >= self.lower_bound


class _LessThan(_Bounded):
    """Values < upper_bound."""

    def __init__(self, upper_bound):
        super().__init__(None, upper_bound)

    def check(self, value):
        return value < self.upper_bound


class _Interval(_Bounded):
    """Values in [lower_bound, upper_bound]."""

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(_Bounded):
    """Values in [lower_bound, upper_bound)."""

    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    """Non-negative vectors (the last dim) summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative vectors (the last dim) summing to at most ``upper_bound`` (PyTorch's
    weaker check: neither the integers nor the exact sum are checked)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices."""

    event_dim = 2

    def check(self, value):
        same = value.tril() == value
        return same.reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(_LowerTriangular):
    """Lower-triangular matrices with a positive diagonal (Cholesky factors)."""

    def check(self, value):
        positive_diagonal = (fnn.diagonal(value, 0, -2, -1) > 0).all(-1)
        return super().check(value) & positive_diagonal


class _Square(Constraint):
    """Square matrices."""

    event_dim = 2

    def check(self, value):
        return fnn.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                        dtype=fnn.bool, device=value.device)


class _Symmetric(_Square):
    """Symmetric matrices (``isclose(value, value.mT, atol=1e-6)``, as PyTorch's)."""

    def check(self, value):
        square = super().check(value)
        if not bool(square.all().item()):
            return square
        return fnn.isclose(value, value.mT, atol=1e-6).all(-1).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric positive-definite matrices (the eigenvalues are found on the host)."""

    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all().item()):
            return symmetric
        lowest = np.linalg.eigvalsh(np.asarray(value.detach().numpy(), np.float64))
        return fnn.tensor((lowest > 0).all(-1), device=value.device)


dependent = _Dependent()
"""A constraint that depends on other parameters (never checked)."""
dependent_property = _DependentProperty
"""Decorator for a distribution property holding a dependent constraint."""
independent = _IndependentConstraint
"""``independent(constraint, n)``: ``constraint`` over events of ``n`` more dims."""
boolean = _Boolean()
"""{0, 1}."""
one_hot = _OneHot()
"""One-hot vectors."""
nonnegative_integer = _IntegerGreaterThan(0)
"""Integers >= 0."""
positive_integer = _IntegerGreaterThan(1)
"""Integers >= 1."""
integer_interval = _IntegerInterval
"""``integer_interval(low, high)``: integers in [low, high]."""
real = _Real()
"""The real line."""
real_vector = independent(real, 1)
"""Real vectors."""
positive = _GreaterThan(0.0)
"""Values > 0."""
nonnegative = _GreaterThanEq(0.0)
"""Values >= 0."""
greater_than = _GreaterThan
"""``greater_than(bound)``: values > bound."""
greater_than_eq = _GreaterThanEq
"""``greater_than_eq(bound)``: values >= bound."""
less_than = _LessThan
"""``less_than(bound)``: values < bound."""
unit_interval = _Interval(0.0, 1.0)
"""[0, 1]."""
interval = _Interval
"""``interval(low, high)``: [low, high]."""
half_open_interval = _HalfOpenInterval
"""``half_open_interval(low, high)``: [low, high)."""
simplex = _Simplex()
"""Probability vectors."""
multinomial = _Multinomial
"""``multinomial(n)``: non-negative count vectors summing to at most ``n``."""
lower_triangular = _LowerTriangular()
"""Lower-triangular matrices."""
lower_cholesky = _LowerCholesky()
"""Lower-triangular matrices with a positive diagonal."""
square = _Square()
"""Square matrices."""
symmetric = _Symmetric()
"""Symmetric matrices."""
positive_definite = _PositiveDefinite()
"""Symmetric positive-definite matrices."""
