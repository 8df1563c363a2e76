"""Weight averaging (``fastnn.optim.swa_utils``), as ``torch.optim.swa_utils``.

- :class:`AveragedModel` keeps a copy of a model whose parameters (and, with
  ``use_buffers=True``, buffers) are the running average of the model's: equal weights
  (SWA, the default) or an exponential moving average (``multi_avg_fn=
  get_ema_multi_avg_fn(decay)``, or ``avg_fn=get_ema_avg_fn(decay)``);
  ``update_parameters(model)`` folds in the model's current weights, ``n_averaged`` counts
  them (a buffer, as PyTorch's), and calling it runs the averaged copy.
- :class:`SWALR` anneals each group's rate to its ``swa_lr`` over ``anneal_epochs``
  (cosine or linear) and holds it there.
- :func:`update_bn` recomputes BatchNorm running statistics for the averaged weights with
  one pass over a loader (a cumulative average, as PyTorch's).

The first ``update_parameters`` copies the model's weights; later ones average, computed
as PyTorch computes them: SWA ``avg + (new - avg) / (n + 1)``, EMA
``lerp(ema, new, 1 - decay)`` for floating tensors and ``ema * decay + new * (1 - decay)``
(truncated back) for integer buffers.
"""

from __future__ import annotations

import copy
import itertools
import math

from fastnn.api.composite_optim import lerp
from fastnn.api.dtypes import int64
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.batchnorm import _BatchNorm
from fastnn.nn.module import Module
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import Tensor, tensor
from fastnn.optim.schedules import LRScheduler
from fastnn.optim.schedules_extra import _per_group

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]


def _check_decay(decay) -> float:
    if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0.0 <= decay <= 1.0:
        raise ValueError(f"EMA decay must be a number in [0, 1], got {decay!r}")
    return float(decay)


def _put(target: Tensor, value) -> None:
    """Write ``value`` (a Tensor) into ``target`` in place, cast to its dtype and device."""
    value = value.detach().to(target.device).to(target.dtype)
    rebind(target, value.clone()._data)  # a copy: never the source's own array


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An exponential moving average over lists of tensors, in place (``multi_avg_fn``):
    floating tensors ``lerp(ema, current, 1 - decay)``, others ``ema * decay + current *
    (1 - decay)`` truncated to their dtype, as PyTorch's."""
    decay = _check_decay(decay)

    def ema_update(ema_list, current_list, _num_averaged) -> None:
        with no_grad():
            for ema, current in zip(ema_list, current_list):
                if ema.dtype.is_floating:
                    ops = ema._device.ops
                    rebind(ema, lerp(ops, ema._data, current.to(ema.device).to(
                        ema.dtype)._data, 1.0 - decay))
                else:
                    _put(ema, ema * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """The equal-weight running average over lists of tensors, in place:
    ``lerp(avg, current, 1 / (n + 1))`` for floating tensors, as PyTorch's."""

    def swa_update(avg_list, current_list, num_averaged) -> None:
        # NOTE: as torch's, 1 / (n + 1) of an integer tensor n is in the default dtype
        weight = float((1 / (num_averaged + 1)).item() if isinstance(num_averaged, Tensor)
                       else 1 / (num_averaged + 1))
        with no_grad():
            for avg, current in zip(avg_list, current_list):
                if avg.dtype.is_floating:
                    rebind(avg, lerp(avg._device.ops, avg._data, current.to(avg.device).to(
                        avg.dtype)._data, weight))
                else:
                    _put(avg, avg + (current - avg) * weight)
    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """An exponential moving average of one tensor (``avg_fn``): returns
    ``decay * ema + (1 - decay) * current``."""
    decay = _check_decay(decay)

    def ema_update(ema, current, _num_averaged):
        return ema * decay + current * (1 - decay)
    return ema_update


def get_swa_avg_fn():
    """The equal-weight running average of one tensor (``avg_fn``): returns
    ``avg + (current - avg) / (n + 1)``."""

    def swa_update(avg, current, num_averaged):
        n = num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged
        return avg + (current - avg) / (n + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose weights average the model's over
    :meth:`update_parameters` calls (SWA by default, or EMA), as PyTorch's."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: give avg_fn or multi_avg_fn, not both")
        for name, fn in (("avg_fn", avg_fn), ("multi_avg_fn", multi_avg_fn)):
            if fn is not None and not callable(fn):
                raise TypeError(f"AveragedModel: {name} must be a function, got {fn!r}")
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel: model must be a fastnn Module, got "
                            f"{type(model).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn, self.multi_avg_fn = avg_fn, multi_avg_fn
        self.use_buffers = bool(use_buffers)

    def forward(self, *args, **kwargs):
        """The averaged copy's forward."""
        return self.module(*args, **kwargs)

    def _pairs(self, model) -> list:
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.module.parameters(), model.parameters()
        return list(zip(ours, theirs))

    def update_parameters(self, model) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them);
        without ``use_buffers`` the buffers are copied from ``model``."""
        pairs = self._pairs(model)
        n = int(self.n_averaged.item())
        with no_grad():
            if n == 0:
                for ours, theirs in pairs:
                    _put(ours, theirs.detach())
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([p for p, _ in pairs], [q.detach() for _, q in pairs],
                                  self.n_averaged)
            else:
                fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for ours, theirs in pairs:
                    _put(ours, fn(ours.detach(), theirs.detach().to(ours.device),
                                  self.n_averaged))
            if not self.use_buffers:
                for ours, theirs in zip(self.module.buffers(), model.buffers()):
                    _put(ours, theirs.detach())
            _put(self.n_averaged, self.n_averaged + 1)


def _reset_running_stats(bn) -> None:
    reset = getattr(bn, "reset_running_stats", None)
    if reset is not None:
        reset()
        return
    if bn.running_mean is not None:
        _put(bn.running_mean, bn.running_mean * 0)
        _put(bn.running_var, bn.running_var * 0 + 1)
        _put(bn.num_batches_tracked, bn.num_batches_tracked * 0)


def update_bn(loader, model, device=None) -> None:
    """Recompute every BatchNorm's running statistics from one pass of ``model`` over
    ``loader`` (a batch, or the first item of a tuple/list batch), as a cumulative
    average; the model's train/eval mode is restored after."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            _reset_running_stats(module)
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with no_grad():
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                if device is not None:
                    batch = batch.to(device)
                model(batch)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to ``swa_lr`` over ``anneal_epochs`` epochs ("cos" or
    "linear"), then hold it, as PyTorch's."""

    STATE = LRScheduler.STATE + ("anneal_epochs", "_anneal_strategy")

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1):
        for lr, group in zip(_per_group("SWALR", "swa_lr", optimizer, swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"SWALR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self._anneal_strategy = anneal_strategy
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or \
                anneal_epochs < 0:
            raise ValueError(f"SWALR: anneal_epochs must be an integer >= 0, got "
                             f"{anneal_epochs!r}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        """The share of swa_lr at fraction ``t`` of the annealing."""
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [g["swa_lr"] if prev_alpha == 1 else
                    (g["lr"] - prev_alpha * g["swa_lr"]) / (1 - prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
