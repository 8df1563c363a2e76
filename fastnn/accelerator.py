"""``fastnn.accelerator``, as ``torch.accelerator``: the device a script should move its
model to when there is one.

An accelerator is an installed, usable backend whose arrays do not live in host memory
(its record's ``host_memory`` is false), whatever its name: cuda, opencl or a
third-party one. Asking loads the installed backends to probe them.
"""

from __future__ import annotations

from fastnn.api.device import current_accelerator


def is_available() -> bool:
    """Whether there is an accelerator (see :func:`current_accelerator`)."""
    return current_accelerator() is not None


def device_count() -> int:
    """How many devices the current accelerator's backend has (0 without one)."""
    found = current_accelerator()
    return len(found.backend.record.devices) if found is not None else 0


__all__ = ["current_accelerator", "device_count", "is_available"]
