"""Checks of a device backend's calls in batches: one transfer for many arrays.

On a device, each ``to_numpy`` waits for the queue and pays a fixed latency (about
0.1 ms on PoCL), which for small ops costs more than the ops. So a device
backend's checked calls wait in a list (their arrays held) until a sync point: an
in-place hook (``assign``, a fused optimizer step, which may overwrite them), a call
checked at once, ``BATCH`` pending calls, or the end of shadowing. Then the arrays
they need are fetched together: flattened with the backend's ``reshape``, joined by
dtype with its ``cat``, copied once per dtype, and split on the host (arrays of
``PACK_BELOW`` elements or more are copied alone). A mismatch
found in a batch is checked again on arrays fetched one by one, so a broken
``reshape`` or ``cat`` cannot blame another op (packing is then switched off).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BATCH = 256  # pending calls at most
# arrays this large go alone: their copy costs bandwidth, not latency, and packing them
# would copy them twice
PACK_BELOW = 1 << 15


@dataclass
class Pending:
    """A device call whose check waits for the next batch."""

    backend: object
    hook: str
    args: tuple
    out: object
    originals: dict
    place: tuple  # (call, step, op in step, source, backward_of), taken at the call


def arrays_in(value) -> list:
    """The backend arrays in an argument or output (lists and tuples flattened)."""
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in arrays_in(item)]
    return [value] if value is not None and hasattr(value, "shape") else []


def fetch(arrays: list, originals: dict, pack: bool) -> list:
    """Host copies of ``arrays`` (one backend's), in order; packed by dtype when ``pack``."""
    to_numpy = originals["to_numpy"]
    hosts: list = [None] * len(arrays)
    groups: dict = {}
    for i, array in enumerate(arrays):
        size = int(np.prod(array.shape))
        if pack and 0 < size < PACK_BELOW:
            groups.setdefault(str(array.dtype), []).append((i, size))
        else:
            hosts[i] = np.asarray(to_numpy(array))
    for members in groups.values():
        if len(members) == 1:
            i = members[0][0]
            hosts[i] = np.asarray(to_numpy(arrays[i]))
            continue
        flat = [originals["reshape"](arrays[i], (size,)) for i, size in members]
        joined = np.asarray(to_numpy(originals["cat"](flat, 0)))
        offset = 0
        for i, size in members:
            hosts[i] = joined[offset:offset + size].reshape(arrays[i].shape)
            offset += size
    return hosts


def frozen(value):
    """``value`` with its lists and tuples copied (the arrays themselves shared): the core
    may change a list a hook returned, or one it passed, before the batch is checked."""
    if isinstance(value, (list, tuple)):
        return type(value)(frozen(item) for item in value)
    return value
