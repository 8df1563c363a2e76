"""``fastnn.cuda``, the part of ``torch.cuda`` a script asks first: is there a usable
CUDA device, and how many.

Answered from the backend registry (the ``cuda`` backend's record, if one is
installed): this module imports no CUDA library itself.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from fastnn import amp as _amp
from fastnn.api import registry
from fastnn.autocast_mode import cuda_autocast, custom_bwd, custom_fwd

amp = SimpleNamespace(GradScaler=_amp.GradScaler, autocast=cuda_autocast,
                      custom_fwd=functools.partial(custom_fwd, device_type="cuda"),
                      custom_bwd=functools.partial(custom_bwd, device_type="cuda"))
"""``fastnn.cuda.amp.GradScaler``, ``fastnn.cuda.amp.autocast`` (regions on cuda, float16
by default), ``custom_fwd`` and ``custom_bwd``: PyTorch's old path to :mod:`fastnn.amp`."""

NAME = "cuda"
"""The backend name these functions ask about."""


def _record():
    if NAME not in registry._discover():
        return None
    return registry.get_backend(NAME, require=False).record


def is_available() -> bool:
    """True when the cuda backend is installed and usable here (a driver and a device)."""
    record = _record()
    return bool(record and record.available)


def device_count() -> int:
    """The number of CUDA devices the cuda backend can use (0 when it is missing or
    unusable)."""
    record = _record()
    return len(record.devices) if record and record.available else 0


__all__ = ["amp", "device_count", "is_available"]
