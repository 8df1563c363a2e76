"""PyTorch's schedules that are more than a formula of the epoch: SequentialLR (one
scheduler after another), OneCycleLR (warm up to ``max_lr``, anneal far below, cycling
the momentum the other way) and ReduceLROnPlateau (cut the rate when a metric stalls).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from fastnn.api.args import integer
from fastnn.api.args import real as check_number
from fastnn.optim.schedules import (
    LRScheduler,
    _check_optimizer,
    _groups_lr,
    _plain,
    warn_epoch_deprecated,
)


class SequentialLR(LRScheduler):
    """``schedulers[i]`` runs from ``milestones[i - 1]`` to ``milestones[i]``; each starts
    afresh (its epoch 0) at its milestone, as PyTorch's."""

    STATE = ("last_epoch", "_last_lr")
    HYPER = ("_milestones",)

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        _check_optimizer("SequentialLR", optimizer)
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR: give at least one scheduler")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau) or not isinstance(s, LRScheduler):
                raise TypeError(f"SequentialLR: schedulers[{i}] must be a schedule of the epoch "
                                f"(not ReduceLROnPlateau), got {type(s).__name__}")
            if s.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] belongs to another optimizer")
        milestones = [integer("SequentialLR", "milestones", m, 0) for m in milestones]
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                             f"{len(schedulers) - 1} milestones, got {len(milestones)}")
        self.optimizer = optimizer
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = integer("SequentialLR", "last_epoch", last_epoch, -1) + 1
        # undo the schedulers' own first steps, then start the first one afresh
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        """Advance one epoch in the scheduler whose span holds it (restarting the next one
        at its milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        """Its own position and each scheduler's state, under ``"schedulers"``."""
        state = super().state_dict()
        state["schedulers"] = {str(i): s.state_dict() for i, s in enumerate(self._schedulers)}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict`, each scheduler from its own part."""
        super().load_state_dict(state)
        saved = state.get("schedulers", {})
        if len(saved) != len(self._schedulers):
            raise ValueError(f"SequentialLR.load_state_dict: the state holds {len(saved)} "
                             f"schedulers, this one {len(self._schedulers)}")
        for i, s in enumerate(self._schedulers):
            s.load_state_dict(saved[str(i)])


class OneCycleLR(LRScheduler):
    """The 1cycle policy, as PyTorch's: from max_lr / div_factor up to ``max_lr`` over
    ``pct_start`` of ``total_steps``, then down to initial_lr / final_div_factor (cos or
    linear); momentum (or Adam's beta1) cycles between max_momentum and base_momentum."""

    HYPER = ("total_steps", "anneal_strategy", "cycle_momentum", "use_beta1", "_phases")

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        owner = "OneCycleLR"
        _check_optimizer(owner, optimizer)
        if total_steps is not None:
            self.total_steps = integer(owner, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (integer(owner, "epochs", epochs, 1)
                                * integer(owner, "steps_per_epoch", steps_per_epoch, 1))
        else:
            raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
        pct_start = check_number(owner, "pct_start", pct_start)
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (float(2 * pct_start * self.total_steps) - 2, "max_lr",
                             "initial_lr", "base_momentum", "max_momentum"),
                            (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        n = len(optimizer.param_groups)
        max_lrs = _per_group(owner, "max_lr", max_lr, n)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum, self.use_beta1 = bool(cycle_momentum), False
        if self.cycle_momentum:
            groups = optimizer.param_groups
            self.use_beta1 = "betas" in groups[0]
            if not self.use_beta1 and "momentum" not in groups[0]:
                raise ValueError("OneCycleLR: cycle_momentum needs an optimizer with momentum "
                                 "or betas; pass cycle_momentum=False")
            if last_epoch == -1:
                for group, top, base in zip(groups, _per_group(owner, "max_momentum",
                                                               max_momentum, n),
                                            _per_group(owner, "base_momentum",
                                                       base_momentum, n)):
                    if self.use_beta1:
                        group["betas"] = (top, *group["betas"][1:])
                    else:
                        group["momentum"] = top
                    group["max_momentum"], group["base_momentum"] = top, base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps "
                             f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[m0], group[m1], pct)
                        if self.use_beta1:
                            group["betas"] = (momentum, *group["betas"][1:])
                        else:
                            group["momentum"] = momentum
                    break
                start = end
        return lrs


def _per_group(owner: str, name: str, value, n: int) -> list:
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(values) != n:
        raise ValueError(f"{owner}: {name} has {len(values)} values for {n} param groups")
    return [check_number(owner, name, v) for v in values]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when ``step(metric)`` has not improved for more than
    ``patience`` epochs (PyTorch's rule, thresholds and cooldown included)."""

    STATE = ("last_epoch", "_last_lr", "best", "num_bad_epochs", "cooldown_counter", "min_lrs")
    HYPER = ("factor", "patience", "cooldown", "threshold", "eps", "mode", "threshold_mode")

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8):
        owner = "ReduceLROnPlateau"
        _check_optimizer(owner, optimizer)
        self.factor = check_number(owner, "factor", factor)
        if not 0.0 <= self.factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be in [0, 1), got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        self.optimizer = optimizer
        self.min_lrs = _per_group(owner, "min_lr", min_lr, len(optimizer.param_groups))
        self.patience = integer(owner, "patience", patience, 0)
        self.cooldown = integer(owner, "cooldown", cooldown, 0)
        self.threshold = check_number(owner, "threshold", threshold)
        self.eps = check_number(owner, "eps", eps)
        self.mode, self.threshold_mode = mode, threshold_mode
        self.last_epoch = 0
        self._last_lr = _groups_lr(optimizer)
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = self.num_bad_epochs = 0

    def _is_better(self, a: float) -> bool:
        best, th = self.best, self.threshold
        if self.mode == "min":
            return a < (best * (1.0 - th) if self.threshold_mode == "rel" else best - th)
        return a > (best * (th + 1.0) if self.threshold_mode == "rel" else best + th)

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record this epoch's ``metrics`` (a number or 0-d tensor) and cut the rates when
        it has not improved for more than ``patience`` epochs (``epoch``, deprecated in
        PyTorch, sets ``last_epoch``)."""
        current = float(_plain(metrics.item() if hasattr(metrics, "item") else metrics))
        if epoch is None:
            self.last_epoch += 1
        else:
            warn_epoch_deprecated()
            self.last_epoch = integer("ReduceLROnPlateau", "epoch", epoch, 0)
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, low in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, low)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = _groups_lr(self.optimizer)
