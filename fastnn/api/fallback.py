"""Opt-in fallback: a primitive that a backend lacks runs on another backend, and is counted.

``fnn.use("mydev", fallback="cpu")`` makes every primitive that ``mydev`` does
not implement copy its array arguments to ``cpu`` through the host, run there,
and copy the results back. Each such op warns once per process, naming the
bytes it moved, and is counted in :func:`fallback_stats`. Without the setting
a missing primitive raises NotImplementedError; with ``FASTNN_STRICT=1`` in
the environment a fallback raises too (for CI that must prove a backend
complete). Ops (the optional hooks) never fall back: their composites are
written with primitives, so only the primitives underneath them do.

Results come back to the backend's device 0 unless the hook takes a
``device_index`` (arrays carry no device in the contract).
"""

from __future__ import annotations

import inspect
import os
import threading
import warnings

import numpy as np

from fastnn.api import hookspec

_lock = threading.Lock()
_targets: dict[str, str] = {}  # backend name -> the backend its missing primitives run on
_stats: dict[str, dict] = {}
_warned: set[str] = set()


def set_fallback(backend: str, target: str | None) -> None:
    """Route ``backend``'s missing primitives to ``target`` (None: raise instead)."""
    if target is None:
        _targets.pop(backend, None)
    else:
        if not isinstance(target, str) or target == backend:
            raise ValueError(f"use: fallback must name another backend than {backend!r}, "
                             f"got {target!r}")
        _targets[backend] = target


def fallback_stats(reset: bool = False) -> dict:
    """``{op: {"calls": int, "bytes": int}}`` for every fallback since the start or the last
    reset; ``reset=True`` returns them and starts again (re-arming the one-time warnings)."""
    with _lock:
        out = {op: dict(counts) for op, counts in _stats.items()}
        if reset:
            _stats.clear()
            _warned.clear()
    return out


def _array_params(name: str) -> tuple[list[str], list[str], list[str]]:
    """The spec's parameters holding one array, those holding sequences of arrays, and all
    of them in order."""
    params = inspect.signature(getattr(hookspec, name)).parameters
    single = [p for p, v in params.items() if str(v.annotation) == "Array"]
    many = [p for p, v in params.items() if "Sequence[Array]" in str(v.annotation)]
    return single, many, list(params)


def missing(backend_name: str, name: str, get_backend):
    """The implementation bound for a primitive that ``backend_name`` lacks."""
    single, many, order = _array_params(name)
    takes_device = "device_index" in order

    def run(*args):
        target = _targets.get(backend_name)
        if target is None:
            raise NotImplementedError(
                f"backend {backend_name!r} does not implement the primitive {name!r}; "
                f"implement the hook {name!r} of fastnn.api.hookspec in that backend, or run "
                f"its missing ops elsewhere with fnn.use({backend_name!r}, fallback='cpu')"
            )
        if os.environ.get("FASTNN_STRICT") == "1":
            raise NotImplementedError(
                f"FASTNN_STRICT=1: backend {backend_name!r} lacks the primitive {name!r}, "
                f"which would fall back to {target!r}; implement it or unset FASTNN_STRICT"
            )
        mine, theirs = get_backend(backend_name).ops, get_backend(target).ops
        moved = [0]

        def there(array):
            host = np.asarray(mine.to_numpy(array))
            moved[0] += host.nbytes
            return theirs.from_numpy(host, 0)

        values = dict(zip(order, args))
        device_index = values.get("device_index", 0) if takes_device else 0
        for p in single:
            if values.get(p) is not None and hasattr(values[p], "shape"):
                values[p] = there(values[p])
        for p in many:
            values[p] = [None if a is None else there(a) for a in values[p]]
        if takes_device:
            values["device_index"] = 0
        result = getattr(theirs, name)(*(values[p] for p in order))

        def back(value):
            if isinstance(value, (list, tuple)):
                return type(value)(back(v) for v in value)
            if hasattr(value, "shape"):
                host = np.asarray(theirs.to_numpy(value))
                moved[0] += host.nbytes
                return mine.from_numpy(host, device_index)
            return value

        result = back(result)
        _count(backend_name, target, name, moved[0])
        return result

    run.__name__ = f"fallback_{name}"
    return run


def _count(backend: str, target: str, name: str, nbytes: int) -> None:
    with _lock:
        counts = _stats.setdefault(name, {"calls": 0, "bytes": 0})
        counts["calls"] += 1
        counts["bytes"] += nbytes
        first = name not in _warned
        _warned.add(name)
    if first:
        warnings.warn(
            f"fastnn: backend {backend!r} lacks {name!r}; it runs on {target!r} (fallback), "
            f"moving {nbytes} bytes in and out this call; fnn.fallback_stats() counts them all",
            RuntimeWarning, stacklevel=3,
        )
