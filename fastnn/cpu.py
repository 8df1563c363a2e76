"""``fastnn.cpu``, the part of ``torch.cpu`` a script asks: ``fnn.cpu.amp.autocast`` (a
mixed-precision region on cpu, PyTorch's default dtype bfloat16, which fastnn's cpu backend
has where ml_dtypes is installed), ``is_available()`` and ``device_count()``."""

from __future__ import annotations

from types import SimpleNamespace

from fastnn import amp as _amp
from fastnn.autocast_mode import cpu_autocast

amp = SimpleNamespace(GradScaler=_amp.GradScaler, autocast=cpu_autocast)
"""``fastnn.cpu.amp.autocast`` and ``fastnn.cpu.amp.GradScaler``: PyTorch's old path to
:mod:`fastnn.amp`."""


def is_available() -> bool:
    """True: the cpu backend ships with fastnn (as ``torch.cpu.is_available()``)."""
    return True


def device_count() -> int:
    """1, as ``torch.cpu.device_count()``."""
    return 1


__all__ = ["amp", "device_count", "is_available"]
