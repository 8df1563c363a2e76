"""PyTorch's learning-rate schedules: the base and the closed-form rules.

Each scheduler follows ``torch.optim.lr_scheduler``: the constructor records
``group["initial_lr"]`` and applies the rate of epoch 0; each :meth:`step`
(call it after ``optimizer.step()``) advances ``last_epoch`` and writes the new
rate into every parameter group, computed *recursively* from the group's
current rate as PyTorch does (so a rate the user or another scheduler changed
carries on from there, and the floating-point results are PyTorch's).
``get_last_lr()`` returns the rates of the last step.

:meth:`LRScheduler.state_dict` holds numbers only (a checkpoint can store it);
:meth:`LRScheduler.load_state_dict` continues from it. Users import them from
:mod:`fastnn.optim.lr_scheduler`.
"""

from __future__ import annotations

import math
import numbers
import types
import warnings
from bisect import bisect_right
from collections import Counter

import numpy as np

from fastnn.api.args import integer
from fastnn.api.args import real as check_number


def warn_epoch_deprecated() -> None:
    """PyTorch's warning for ``scheduler.step(epoch)``, which it still honours."""
    warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being "
                  "deprecated where possible. Please use `scheduler.step()` to step the "
                  "scheduler. During the deprecation, if epoch is different from None, the "
                  "closed form is used instead of the new chainable form, where available.",
                  UserWarning, stacklevel=3)


def _warn_if_optimizer_not_stepped(optimizer) -> None:
    """PyTorch's warning for a first ``scheduler.step()`` before any ``optimizer.step()``
    (the first rate of the schedule is then skipped); fastnn's optimizers record their
    steps, another optimizer is not checked."""
    if (getattr(type(optimizer).step, "runs_step_hooks", False)
            and not optimizer.__dict__.get("_opt_called")):
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In "
                      "PyTorch 1.1.0 and later, you should call them in the opposite order: "
                      "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                      "will result in PyTorch skipping the first value of the learning rate "
                      "schedule. See more details at "
                      "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                      UserWarning, stacklevel=3)


def _groups_lr(optimizer) -> list:
    return [group["lr"] for group in optimizer.param_groups]


def _check_optimizer(owner: str, optimizer) -> None:
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, list) or not all(isinstance(g, dict) and "lr" in g
                                               for g in groups):
        raise TypeError(f"{owner}: expected an optimizer (e.g. fnn.optim.SGD(...)), got "
                        f"{type(optimizer).__name__}")


def _fraction(owner: str, name: str, value, low_open: bool = False) -> float:
    value = check_number(owner, name, value)
    if not ((0.0 < value) if low_open else (0.0 <= value)) or value > 1.0:
        bound = "(0, 1]" if low_open else "[0, 1]"
        raise ValueError(f"{owner}: {name} must be in {bound}, got {value}")
    return value


def _plain(value):
    """A saved entry back as Python numbers (a checkpoint returns NumPy arrays)."""
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else [v.item() for v in value.ravel()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _is_plain(value) -> bool:
    """A number, string, bool or None, or a list, tuple or str-keyed dict of those."""
    if value is None or isinstance(value, (bool, numbers.Number, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


class LRScheduler:
    """Base: a rule implements ``get_lr()`` (the rates of ``self.last_epoch``)."""

    #: the attributes state_dict() saves (numbers and lists of numbers)
    STATE = ("last_epoch", "_step_count", "base_lrs", "_last_lr")
    #: the rule's hyperparameters, saved too (PyTorch's state_dict is the scheduler's
    #: __dict__) and restored from a state that holds them, so a scheduler built with other
    #: arguments continues with the saved ones, as PyTorch's does
    HYPER: tuple = ()

    def __init__(self, optimizer, last_epoch: int = -1):
        owner = type(self).__name__
        _check_optimizer(owner, optimizer)
        self.optimizer = optimizer
        last_epoch = integer(owner, "last_epoch", last_epoch, -1)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{owner}: param_groups[{i}] has no 'initial_lr', which "
                               "last_epoch >= 0 resumes from; load the optimizer's state_dict "
                               "first, or leave last_epoch at -1")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The rates of epoch ``self.last_epoch``, one per group (each rule defines it,
        from the groups' current rates where PyTorch's rule is recursive)."""
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The rates the last step set, one per parameter group."""
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or batch: whatever the schedule counts) and set every group's
        ``lr``; call it after ``optimizer.step()``. ``step(epoch)`` (deprecated in PyTorch,
        with its warning) jumps to ``epoch``: the closed form where the rule has one."""
        if self._step_count == 1 and not self._is_initial:
            _warn_if_optimizer_not_stepped(self.optimizer)
        self._step_count += 1
        if epoch is not None:
            warn_epoch_deprecated()
            epoch = integer(type(self).__name__, "epoch", epoch, 0)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:  # step(epoch), or SequentialLR's restart at a milestone: the closed form
            self.last_epoch = epoch
            values = self._closed_form() if hasattr(self, "_closed_form") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            if not math.isfinite(lr) or lr < 0:
                raise ValueError(f"{type(self).__name__}: the learning rate at epoch "
                                 f"{self.last_epoch} is {lr}; it must be finite and >= 0")
            group["lr"] = lr
        self._last_lr = _groups_lr(self.optimizer)

    def state_dict(self) -> dict:
        """The scheduler's position and hyperparameters, as numbers and strings (for
        ``fnn.save``)."""
        return {name: (list(v) if isinstance(v, (list, tuple)) else v)
                for name in self.STATE + self.HYPER + self._own()
                for v in [getattr(self, name)]}

    def _own(self) -> tuple:
        """A rule written outside fastnn (a user's warm-up subclass): its own plain attributes,
        counters included, saved and restored too, as PyTorch's state_dict (the whole
        __dict__) keeps them."""
        if type(self).__module__.startswith("fastnn."):
            return ()
        known = {*self.STATE, *self.HYPER, "optimizer"}
        return tuple(k for k, v in vars(self).items() if k not in known and _is_plain(v))

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict` (also as ``fnn.load`` returns it)."""
        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state, dict):
            raise TypeError(f"{owner}: expected the dict that state_dict() returned, got "
                            f"{type(state).__name__}")
        missing = sorted(set(self.STATE) - set(state))
        if missing:
            raise ValueError(f"{owner}: the state lacks {missing} (was it saved from another "
                             "scheduler?)")
        for name in self.STATE:
            setattr(self, name, _plain(state[name]))
        for name in self.HYPER + self._own():
            if name in state:
                self._restore(name, state[name])

    def _restore(self, name: str, value) -> None:
        """Set hyperparameter ``name`` from a saved state (a rule whose attribute is not a
        plain number overrides it)."""
        setattr(self, name, _plain(value))


class WithLambdas:
    """PyTorch's rule for the ``lr_lambdas`` of LambdaLR and MultiplicativeLR in a state: a
    function is saved as None, a callable object as a copy of its ``__dict__`` (its own
    state: a warm-up length, a counter), which load_state_dict puts back into the callable
    this scheduler was given."""

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType)
                               or not hasattr(fn, "__dict__") else dict(vars(fn))
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        for fn, saved in zip(self.lr_lambdas, state.get("lr_lambdas") or ()):
            if isinstance(saved, dict):
                vars(fn).update(saved)


class LambdaLR(WithLambdas, LRScheduler):
    """lr = initial_lr * lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer("LambdaLR", optimizer)
        n = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(lambdas) != n or not all(callable(f) for f in lambdas):
            raise TypeError(f"LambdaLR: lr_lambda must be a function of the epoch (or a list of "
                            f"{n}, one per param group), got {lr_lambda!r}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * _factor(fn, self.last_epoch) for fn, base in zip(self.lr_lambdas,
                                                                        self.base_lrs)]


def _factor(fn, epoch: int) -> float:
    """``fn(epoch)`` as a float, or a TypeError naming what the lr_lambda returned."""
    value = fn(epoch)
    if isinstance(value, (str, bytes)) or not np.isscalar(value) and np.ndim(value) != 0:
        raise TypeError(f"LambdaLR: lr_lambda({epoch}) returned {type(value).__name__} "
                        f"{value!r}; it must return a number, the factor on the initial lr")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"LambdaLR: lr_lambda({epoch}) returned {type(value).__name__} "
                        f"{value!r}; it must return a number, the factor on the initial "
                        "lr") from None


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    HYPER = ("step_size", "gamma")

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        # a real number, kept as given: the transformer tutorial passes 1.0, which PyTorch's
        # epoch arithmetic (last_epoch % step_size) takes
        if check_number("StepLR", "step_size", step_size) <= 0:
            raise ValueError(f"StepLR: step_size must be > 0, got {step_size!r}")
        self.step_size = step_size
        self.gamma = check_number("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _groups_lr(self.optimizer)
        return [lr * self.gamma for lr in _groups_lr(self.optimizer)]

    def _closed_form(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each epoch of ``milestones``."""

    HYPER = ("milestones", "gamma")

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        try:
            milestones = [integer("MultiStepLR", "milestones", m, 0) for m in milestones]
        except TypeError:
            raise TypeError(f"MultiStepLR: milestones must be a list of epochs, got "
                            f"{milestones!r}") from None
        self.milestones = Counter(milestones)
        self.gamma = check_number("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _restore(self, name, value):
        if name == "milestones":  # a Counter, saved as {epoch: count} (as PyTorch's)
            value = Counter({int(_plain(k)): int(_plain(n)) for k, n in dict(value).items()})
        super()._restore(name, value)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return _groups_lr(self.optimizer)
        return [lr * self.gamma ** self.milestones[self.last_epoch]
                for lr in _groups_lr(self.optimizer)]

    def _closed_form(self):
        milestones = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(milestones, self.last_epoch)
                for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch."""

    HYPER = ("gamma",)

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = check_number("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _groups_lr(self.optimizer)
        return [lr * self.gamma for lr in _groups_lr(self.optimizer)]

    def _closed_form(self):
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The usual warm-up: the factor goes linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs, then stays."""

    HYPER = ("start_factor", "end_factor", "total_iters")

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        self.start_factor = _fraction("LinearLR", "start_factor", start_factor, low_open=True)
        self.end_factor = _fraction("LinearLR", "end_factor", end_factor)
        self.total_iters = integer("LinearLR", "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _groups_lr(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in lrs]

    def _closed_form(self):
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from the initial rate down to ``eta_min`` over ``T_max`` epochs, and back up
    over the next ``T_max`` (PyTorch's recursive form: a period of 2 T_max)."""

    HYPER = ("T_max", "eta_min")

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = integer("CosineAnnealingLR", "T_max", T_max, 1)
        self.eta_min = check_number("CosineAnnealingLR", "eta_min", eta_min)
        if self.eta_min < 0:
            raise ValueError(f"CosineAnnealingLR: eta_min must be >= 0, got {eta_min}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _groups_lr(self.optimizer)
        if self._step_count == 1 and t > 0:
            return [low + (b - low) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - low) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                * (g["lr"] - low) + low for g in groups]

    def _closed_form(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        return [low + (b - low) * (1 + math.cos(math.pi * t / T)) / 2 for b in self.base_lrs]
