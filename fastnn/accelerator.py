"""``fastnn.accelerator``, as ``torch.accelerator``: the device a script should move its
model to when there is one.

An accelerator is an installed, usable backend whose arrays do not live in host memory
(its record's ``host_memory`` is false), whatever its name: cuda, opencl or a
third-party one. Asking loads the installed backends to probe them.
"""

from __future__ import annotations

from fastnn.api import registry
from fastnn.api.device import Device, as_device, get_device


def _usable(record) -> bool:
    return record.available and not record.host_memory


def current_accelerator() -> Device | None:
    """The accelerator as a device: the current default device when it is one, else the
    first usable accelerator backend by name; None when there is none."""
    default = get_device()
    if _usable(default.backend.record):
        return default
    for record in registry.backends():
        if _usable(record):
            return as_device(record.name)
    return None


def is_available() -> bool:
    """Whether there is an accelerator (see :func:`current_accelerator`)."""
    return current_accelerator() is not None


def device_count() -> int:
    """How many devices the current accelerator's backend has (0 without one)."""
    found = current_accelerator()
    return len(found.backend.record.devices) if found is not None else 0


__all__ = ["current_accelerator", "device_count", "is_available"]
