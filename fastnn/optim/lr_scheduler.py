"""Learning-rate schedules: warm-up, cosine and linear decay.

A scheduler multiplies each parameter group's initial learning rate by
``factor(t)``, where t counts the calls to :meth:`LRScheduler.step` (call it
once per optimizer step, after ``optimizer.step()``). At construction t = 0
and the factor for t = 0 is applied at once, as in PyTorch.

Factors (T = total steps, W = warm-up steps):

- warm-up: (t + 1) / W for t < W, then 1 (linear ramp that reaches full lr at step W - 1);
- cosine: min + (1 - min) * (1 + cos(pi * t / T)) / 2, held at min after T;
- linear decay: 1 + (end - 1) * t / T, held at end after T.

:class:`WarmupCosine` and :class:`WarmupLinear` chain a warm-up with a decay
over the remaining steps; :class:`LambdaLR` takes any factor function.
"""

from __future__ import annotations

import math
import numbers

from fastnn.api.args import integer


def warmup_factor(t: int, warmup_steps: int) -> float:
    """The linear warm-up factor at step ``t``: (t + 1) / warmup_steps, then 1."""
    return 1.0 if warmup_steps <= 0 or t >= warmup_steps else (t + 1) / warmup_steps


def cosine_factor(t: int, total_steps: int, min_factor: float = 0.0) -> float:
    """The cosine factor at step ``t``: min + (1 - min) * (1 + cos(pi * t / total)) / 2,
    falling from 1 to ``min_factor`` over ``total_steps``, then ``min_factor``."""
    if total_steps <= 0 or t >= total_steps:
        return min_factor
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * t / total_steps))


def linear_factor(t: int, total_steps: int, end_factor: float = 0.0) -> float:
    """The linear factor at step ``t``: from 1 to ``end_factor`` over ``total_steps``, then
    ``end_factor``."""
    if total_steps <= 0 or t >= total_steps:
        return end_factor
    return 1.0 + (end_factor - 1.0) * t / total_steps


def _factor(owner, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(
            f"{type(owner).__name__}: {name} must be a number in [0, 1] (a fraction of the base "
            f"rate), got {value!r}"
        )
    return float(value)


def _warmup_total(owner, warmup_steps, total_steps) -> tuple[int, int]:
    name = type(owner).__name__
    warmup = integer(name, "warmup_steps", warmup_steps, 0)
    total = integer(name, "total_steps", total_steps, 1)
    if warmup >= total:
        raise ValueError(
            f"{type(owner).__name__}: warmup_steps ({warmup}) must be below total_steps "
            f"({total}), which counts the warm-up too"
        )
    return warmup, total


class LRScheduler:
    """Base: sets ``group["lr"] = base_lr * self.factor(t)`` for every group."""

    def __init__(self, optimizer):
        from fastnn.optim.optimizer import Optimizer

        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__}: expected an optimizer (e.g. fnn.optim.SGD(...)), got "
                f"{type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.last_step = 0
        self._apply()

    def factor(self, t: int) -> float:
        """The learning rate at step ``t`` as a multiple of each group's base rate (finite,
        >= 0); each schedule defines it."""
        raise NotImplementedError

    def _apply(self) -> None:
        f = self.factor(self.last_step)
        if not (math.isfinite(f) and f >= 0):
            raise ValueError(
                f"{type(self).__name__}: the learning-rate factor at step {self.last_step} is "
                f"{f}; it must be finite and >= 0 (a negative rate climbs the loss)"
            )
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * f

    def step(self) -> None:
        """Advance one step and set every group's ``lr`` to its base rate times ``factor``."""
        self.last_step += 1
        self._apply()

    def get_last_lr(self) -> list:
        """The learning rate of each parameter group, as last set."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """The step count and base rates, for a checkpoint."""
        return {"last_step": self.last_step, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict) -> None:
        """Restore a ``state_dict()`` and set the groups' rates for its step."""
        self.last_step = int(state["last_step"])
        self.base_lrs = [float(v) for v in state["base_lrs"]]
        self._apply()


class LambdaLR(LRScheduler):
    """factor(t) = fn(t) for any function of the step count."""

    def __init__(self, optimizer, fn):
        self.fn = fn
        super().__init__(optimizer)

    def factor(self, t):
        return float(self.fn(t))


class LinearWarmup(LRScheduler):
    """Linear warm-up over ``warmup_steps``, then the base rate."""

    def __init__(self, optimizer, warmup_steps: int):
        self.warmup_steps = integer(type(self).__name__, "warmup_steps", warmup_steps, 0)
        super().__init__(optimizer)

    def factor(self, t):
        return warmup_factor(t, self.warmup_steps)


class CosineAnnealing(LRScheduler):
    """Cosine decay from the base rate to ``min_factor`` times it over ``total_steps``.

    After ``total_steps`` the rate stays at its minimum, as Keras' ``CosineDecay``
    and optax's ``cosine_decay_schedule`` do; PyTorch's ``CosineAnnealingLR``
    instead follows the cosine back up (use it for warm restarts).
    """

    def __init__(self, optimizer, total_steps: int, min_factor: float = 0.0):
        self.total_steps = integer(type(self).__name__, "total_steps", total_steps, 1)
        self.min_factor = _factor(self, "min_factor", min_factor)
        super().__init__(optimizer)

    def factor(self, t):
        return cosine_factor(t, self.total_steps, self.min_factor)


class LinearDecay(LRScheduler):
    """Linear decay from the base rate to ``end_factor`` times it over ``total_steps``."""

    def __init__(self, optimizer, total_steps: int, end_factor: float = 0.0):
        self.total_steps = integer(type(self).__name__, "total_steps", total_steps, 1)
        self.end_factor = _factor(self, "end_factor", end_factor)
        super().__init__(optimizer)

    def factor(self, t):
        return linear_factor(t, self.total_steps, self.end_factor)


class WarmupCosine(LRScheduler):
    """Warm-up over ``warmup_steps``, then cosine decay over the rest of ``total_steps``."""

    def __init__(self, optimizer, warmup_steps: int, total_steps: int, min_factor: float = 0.0):
        self.warmup_steps, self.total_steps = _warmup_total(self, warmup_steps, total_steps)
        self.min_factor = _factor(self, "min_factor", min_factor)
        super().__init__(optimizer)

    def factor(self, t):
        if t < self.warmup_steps:
            return warmup_factor(t, self.warmup_steps)
        return cosine_factor(t - self.warmup_steps, self.total_steps - self.warmup_steps,
                             self.min_factor)


class WarmupLinear(LRScheduler):
    """Warm-up over ``warmup_steps``, then linear decay over the rest of ``total_steps``."""

    def __init__(self, optimizer, warmup_steps: int, total_steps: int, end_factor: float = 0.0):
        self.warmup_steps, self.total_steps = _warmup_total(self, warmup_steps, total_steps)
        self.end_factor = _factor(self, "end_factor", end_factor)
        super().__init__(optimizer)

    def factor(self, t):
        if t < self.warmup_steps:
            return warmup_factor(t, self.warmup_steps)
        return linear_factor(t - self.warmup_steps, self.total_steps - self.warmup_steps,
                             self.end_factor)


__all__ = ["CosineAnnealing", "LRScheduler", "LambdaLR", "LinearDecay", "LinearWarmup",
           "WarmupCosine", "WarmupLinear", "cosine_factor", "linear_factor", "warmup_factor"]
