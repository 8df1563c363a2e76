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


def is_available() -> bool:
    """True when the cuda backend is installed and usable here (a driver and a device)."""
    record = registry.record_of(NAME)
    return bool(record and record.available)


def device_count() -> int:
    """The number of CUDA devices the cuda backend can use (0 when it is missing or
    unusable)."""
    record = registry.record_of(NAME)
    return len(record.devices) if record and record.available else 0


def _require(op: str) -> None:
    if not is_available():
        raise RuntimeError(f"torch.cuda.{op}: no usable CUDA device (fastnn's cuda backend is "
                           f"not installed or finds no GPU and driver); `fastnn info` says why")


def manual_seed(seed) -> None:
    """Seed the CUDA device's random draws, as ``torch.cuda.manual_seed``: fastnn draws on
    every device from its one generator, so this seeds that (``fnn.manual_seed``) where a
    CUDA device is usable, and, as PyTorch's, does nothing where none is."""
    if is_available():
        from fastnn.ops.rng_state import manual_seed as seed_everything

        seed_everything(int(seed))


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Wait until the CUDA device has finished its queued work."""
    _require("synchronize")
    from fastnn.api.device import as_device
    from fastnn.ops.tensor import zeros

    zeros(1, device=as_device("cuda" if device is None else device)).numpy()  # a read waits


def empty_cache() -> None:
    """Give cached device memory back, as PyTorch's; here a no-op where no CUDA device is
    usable (as PyTorch's) and where the backend keeps no cache of its own."""


def current_device() -> int:
    """The index of the current CUDA device."""
    _require("current_device")
    from fastnn.api.device import get_device

    found = get_device()
    return found.index if found.type == NAME else 0


def get_device_name(device=None) -> str:
    """The name of a CUDA device, as its driver reports it."""
    _require("get_device_name")
    record = registry.record_of(NAME)
    index = 0 if device is None else int(str(device).rpartition(":")[2] or 0) \
        if not isinstance(device, int) else device
    return str(record.devices[index])


def is_bf16_supported() -> bool:
    """Whether bfloat16 runs on the CUDA device (False where none is usable)."""
    record = registry.record_of(NAME)
    return bool(record and record.available and "bfloat16" in getattr(record, "dtypes", ()))


__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name",
           "is_available", "is_bf16_supported", "manual_seed", "manual_seed_all",
           "synchronize"]
