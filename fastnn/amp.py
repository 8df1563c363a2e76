"""``fastnn.amp``: PyTorch's automatic mixed precision, ``autocast`` and ``GradScaler``.

``fnn.amp.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`` (also
``fnn.autocast``) opens a region in which matmul, linear and the convolutions run in float16
and softmax, the losses and the norms in float32, as PyTorch's op lists say (see
:mod:`fastnn.autocast_mode` and the table in :mod:`fastnn.ops.autocasting`).

``GradScaler`` (also ``fastnn.cuda.amp.GradScaler``) is PyTorch's loss scaling for float16
training: the loss is multiplied by a scale before ``backward`` so that small gradients do
not underflow, the gradients are divided by it before the optimizer steps, a step whose
gradients hold inf or NaN is skipped, and the scale backs off after such a step and grows
after ``growth_interval`` clean ones. It runs on every backend (it only multiplies
tensors); with a power-of-two scale a float32 model trains to the same weights as without it.
As PyTorch's, a scaler for ``"cuda"`` (the default device) where no CUDA device is usable
warns and disables itself: ask for ``GradScaler("cpu")`` to scale on the host.
"""

from __future__ import annotations

import math
import warnings

from fastnn.api import registry
from fastnn.autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from fastnn.autograd import no_grad
from fastnn.ops.tensor import Tensor

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


def _usable(device) -> bool:
    """False, with PyTorch's warning, for a scaler on ``"cuda"`` where no CUDA device is
    usable: PyTorch disables such a scaler (nanoGPT's float16 setting on a CPU machine
    trains unscaled), so ``scale(loss)`` must not multiply there either."""
    record = registry.record_of("cuda") if device == "cuda" else None
    if device != "cuda" or (record and record.available):
        return True
    warnings.warn("GradScaler is enabled, but CUDA is not available (fastnn's cuda backend "
                  "is missing or finds no device).  Disabling.", UserWarning, stacklevel=3)
    return False


class GradScaler:
    """PyTorch's GradScaler: ``scale(loss).backward()``, ``step(optimizer)``, ``update()``."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got "
                             f"{backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or (
                growth_interval < 1):
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got "
                             f"{growth_interval!r}")
        if not init_scale > 0:
            raise ValueError(f"GradScaler: init_scale must be > 0, got {init_scale}")
        self.device = device
        self._enabled = bool(enabled) and _usable(device)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._per_optimizer: dict = {}  # id(optimizer) -> [stage, found_inf]

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples/dicts of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list/tuple/dict of them, "
                        f"got {type(outputs).__name__}")

    def _state(self, optimizer) -> list:
        return self._per_optimizer.setdefault(id(optimizer), [_READY, False])

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and note whether any
        holds inf or NaN (once per optimizer between updates, as PyTorch)."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state[0] == _UNSCALED:
            raise RuntimeError("GradScaler.unscale_: already called on this optimizer since "
                               "the last update()")
        if state[0] == _STEPPED:
            raise RuntimeError("GradScaler.unscale_: called after step(); call update() first")
        inverse = 1.0 / self._scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inverse)
                    if not found:
                        total = float(p.grad.detach().abs().sum().item())
                        found = not math.isfinite(total)
        state[:] = [_UNSCALED, found]

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, skipped (returning
        None) when they hold inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: closure use is not supported (as PyTorch)")
        state = self._state(optimizer)
        if state[0] == _STEPPED:
            raise RuntimeError("GradScaler.step: already called on this optimizer since the "
                               "last update()")
        if state[0] == _READY:
            self.unscale_(optimizer)
        result = None if state[1] else optimizer.step(*args, **kwargs)
        state[0] = _STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Back the scale off if a step since the last update found inf/NaN, else count a
        clean step and grow it every ``growth_interval`` of them; or set ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
            if not value > 0:
                raise ValueError(f"GradScaler.update: new_scale must be > 0, got {value}")
            self._scale = value
        elif self._per_optimizer:
            if any(found for _, found in self._per_optimizer.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def state_dict(self) -> dict:
        """PyTorch's entries: scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty (it came from "
                               "a disabled scaler)")
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
