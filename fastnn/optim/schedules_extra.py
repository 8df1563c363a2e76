"""More of PyTorch's learning-rate schedules: MultiplicativeLR, ConstantLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR and ChainedScheduler, each computing its rates as
torch 2.13's does (recursively from the groups' current rates where torch's does), with
``state_dict()``/``load_state_dict()``. Users import them from
:mod:`fastnn.optim.lr_scheduler`.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.api.args import real as check_number
from fastnn.optim.schedules import (
    LRScheduler,
    WithLambdas,
    _check_optimizer,
    _factor,
    _groups_lr,
    _plain,
)
from fastnn.optim.schedules_more import ReduceLROnPlateau


def _per_group(owner: str, name: str, optimizer, value) -> list:
    """One value per param group: a list of that many, or one value for every group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{owner}: expected {n} values of {name} (one per param group), "
                             f"got {len(value)}")
        return [check_number(owner, name, v) for v in value]
    return [check_number(owner, name, value)] * n


class MultiplicativeLR(WithLambdas, LRScheduler):
    """Multiply each group's rate by ``lr_lambda(epoch)`` every epoch (one function, or one
    per group), as PyTorch's."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        _check_optimizer("MultiplicativeLR", optimizer)
        n = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(lambdas) != n:
            raise ValueError(f"MultiplicativeLR: expected {n} lr_lambdas, got {len(lambdas)}")
        if not all(callable(f) for f in lambdas):
            raise TypeError(f"MultiplicativeLR: lr_lambda must be a function of the epoch (or "
                            f"a list of {n}), got {lr_lambda!r}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _groups_lr(self.optimizer)
        return [lr * _factor(fn, self.last_epoch)
                for fn, lr in zip(self.lr_lambdas, _groups_lr(self.optimizer))]


class ConstantLR(LRScheduler):
    """The rate times ``factor`` until epoch ``total_iters``, then the rate itself."""

    HYPER = ("factor", "total_iters")

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        factor = check_number("ConstantLR", "factor", factor)
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor = factor
        self.total_iters = integer("ConstantLR", "total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _groups_lr(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _closed_form(self):
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay to 0 over ``total_iters`` epochs as (1 - t / total_iters) ** power."""

    HYPER = ("total_iters", "power")

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = integer("PolynomialLR", "total_iters", total_iters, 1)
        self.power = check_number("PolynomialLR", "power", power)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        lrs = _groups_lr(self.optimizer)
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        t, n = self.last_epoch, self.total_iters
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * decay for lr in lrs]

    def _closed_form(self):
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * (1.0 - done) ** self.power for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine from the initial rate to ``eta_min`` over ``T_0`` epochs, restarting,
    each period ``T_mult`` times the last; ``step(epoch)`` jumps to a (fractional) epoch."""

    STATE = LRScheduler.STATE + ("T_0", "T_i", "T_mult", "eta_min", "T_cur")

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_0 = self.T_i = integer("CosineAnnealingWarmRestarts", "T_0", T_0, 1)
        self.T_mult = integer("CosineAnnealingWarmRestarts", "T_mult", T_mult, 1)
        self.eta_min = check_number("CosineAnnealingWarmRestarts", "eta_min", eta_min)
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur
                                                                  / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to ``epoch`` (a float moves within a period)."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            epoch = check_number("CosineAnnealingWarmRestarts", "epoch", epoch)
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be >= 0, got "
                                 f"{epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set(self.get_lr())

    def _update_lr(self, epoch=None) -> None:  # SequentialLR's restart at a milestone
        if epoch is None:
            self.step()
        else:
            self._step_count -= 1
            self.step(epoch)

    def _set(self, values) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _groups_lr(self.optimizer)


class CyclicLR(LRScheduler):
    """Cyclical learning rates (and, with ``cycle_momentum``, momenta or Adam's beta1 the
    other way) between ``base_lr`` and ``max_lr``, as PyTorch's; step it every batch."""

    STATE = LRScheduler.STATE + ("max_lrs", "total_size", "step_ratio", "mode", "gamma",
                                 "scale_mode", "cycle_momentum", "base_momentums",
                                 "max_momentums", "use_beta1")

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down=None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1):
        owner = "CyclicLR"
        _check_optimizer(owner, optimizer)
        base_lrs = _per_group(owner, "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group(owner, "max_lr", optimizer, max_lr)
        up = float(integer(owner, "step_size_up", step_size_up, 1))
        down = up if step_size_down is None else float(
            integer(owner, "step_size_down", step_size_down, 1))
        self.total_size, self.step_ratio = up + down, up / (up + down)
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or "
                             f"'exp_range' (or give scale_fn), got {mode!r}")
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"CyclicLR: scale_fn must be a function, got {scale_fn!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r}")
        self.mode, self.gamma = mode, check_number(owner, "gamma", gamma)
        self._scale_fn_custom, self.scale_mode = scale_fn, scale_mode
        self._init_scale_mode()
        self.cycle_momentum = bool(cycle_momentum)
        self.use_beta1, self.base_momentums, self.max_momentums = False, None, None
        if self.cycle_momentum:
            defaults = getattr(optimizer, "defaults", {})
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError("CyclicLR: cycle_momentum needs an optimizer with momentum or "
                                 "betas (SGD, RMSprop, Adam, ...); pass cycle_momentum=False")
            self.use_beta1 = "betas" in defaults
            self.base_momentums = _per_group(owner, "base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group(owner, "max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for high, low, group in zip(self.max_momentums, self.base_momentums,
                                            optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def _set_momentum(self, group, value) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale = x / self.step_ratio
        else:
            scale = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [low + (high - low) * scale * self.scale_fn(at)
               for low, high in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for low, high, group in zip(self.base_momentums, self.max_momentums,
                                        self.optimizer.param_groups):
                self._set_momentum(group, high - (high - low) * scale * self.scale_fn(at))
        return lrs

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict` (a custom scale_fn stays the one given)."""
        super().load_state_dict(state)
        self._init_scale_mode()


class ChainedScheduler(LRScheduler):
    """Step every scheduler of ``schedulers`` at once (their factors multiply), as
    PyTorch's; ``optimizer`` defaults to the first scheduler's."""

    STATE = ("_last_lr",)

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler: give at least one scheduler to chain")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"ChainedScheduler: schedulers[{i}] has no optimizer; it "
                                f"must be a schedule, got {type(s).__name__}")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"ChainedScheduler: schedulers[{i}] is ReduceLROnPlateau, "
                                 "whose step needs a metric; step it on its own")
            if s.optimizer is not optimizer:
                raise ValueError(f"ChainedScheduler: schedulers[{i}] belongs to another "
                                 "optimizer")
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = _groups_lr(schedulers[-1].optimizer)

    def step(self) -> None:
        """Step each chained scheduler, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = _groups_lr(self._schedulers[-1].optimizer)

    def state_dict(self) -> dict:
        """Its own last rates and each chained scheduler's state_dict."""
        return {"_last_lr": list(self._last_lr),
                "_schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict`."""
        saved = state.get("_schedulers") if isinstance(state, dict) else None
        if not isinstance(saved, (list, tuple)) or len(saved) != len(self._schedulers):
            raise ValueError(f"ChainedScheduler.load_state_dict: expected the states of "
                             f"{len(self._schedulers)} schedulers, as state_dict() gives")
        self._last_lr = _plain(state["_last_lr"])
        for s, st in zip(self._schedulers, saved):
            s.load_state_dict(st)
