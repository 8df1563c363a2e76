"""Per-device block sizes of the packed CPU GEMM kernel (``k_gemm_packed``), chosen by a
small timed run.

The first packed GEMM on a CPU device times a few (TM, VN) blocks (TM rows by VN vectors
of :func:`linalg.packed_lanes` lanes per work-item) on a 384^3 product, best of five
interleaved rounds, and keeps the fastest. The choice is cached on disk, keyed by the
device's name, the dtype and the kernel's version, in ``<fastnn cache>/opencl_gemm.json``
(``FASTNN_CACHE`` overrides the folder), with :mod:`gemm_wide`'s verdict on 16-lane
vectors (a different lane count tunes afresh: the key names it); a corrupt or unreadable
cache is ignored with a warning and rewritten. ``FASTNN_OPENCL_TUNE=0`` skips the run and
uses the defaults.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings

import numpy as np

from fastnn.api.certificates import cache_dir

CANDIDATES = ((6, 2), (4, 3), (4, 2), (8, 1))  # (TM, VN); the first is the default
CACHE_NAME = "opencl_gemm.json"
VERSION = "packed2"  # part of the cache key: a new kernel design tunes afresh
_SIZE = 384
_ROUNDS = 5
_chosen: dict = {}
_lock = threading.Lock()


def cache_path():
    return cache_dir() / CACHE_NAME


def read_cache() -> dict:
    path = cache_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        warnings.warn(f"opencl: cannot read the GEMM tuning cache {path} ({exc}); ignoring it",
                      stacklevel=3)
        return {}
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except ValueError as exc:
        warnings.warn(f"opencl: the GEMM tuning cache {path} is corrupt ({exc}); ignoring it "
                      "(it is rewritten after the next tuning run)", stacklevel=3)
        return {}


def _valid(entry) -> bool:
    return (isinstance(entry, list) and len(entry) == 2
            and tuple(entry) in {tuple(c) for c in CANDIDATES})


def write_cache(key: str, value) -> None:
    """Store ``value`` (JSON: a block as a list, a verdict as a bool) under ``key``."""
    path = cache_path()
    data = read_cache()
    data[key] = list(value) if isinstance(value, tuple) else value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache folder: tune again next time
        warnings.warn(f"opencl: cannot write the GEMM tuning cache {path} ({exc})",
                      stacklevel=3)


def _time_candidate(dev, dtype: str, tm: int, vn: int, a, b, c) -> float:
    """Wall time of one _SIZE^3 packed product with this block (the queue drained)."""
    from fastnn_opencl import linalg

    n = _SIZE
    _forced[0] = (tm, vn)
    try:
        start = time.perf_counter()
        linalg.gemm_packed(a, b, c, n, n, n, 1, (0, n, 1), (0, n, 1), (0, n, 1))
        dev.queue.finish()
        return time.perf_counter() - start
    finally:
        _forced[0] = None


_forced: list = [None]  # the block a tuning run times


def tune(dev, dtype: str) -> tuple:
    """(TM, VN) of the fastest candidate on ``dev`` for ``dtype`` (no cache involved)."""
    from fastnn_opencl.misc import from_numpy

    rng = np.random.default_rng(0)
    a, b = (from_numpy(rng.standard_normal((_SIZE, _SIZE)).astype(dtype), dev.index)
            for _ in range(2))
    c = dev.empty((_SIZE, _SIZE), dtype)
    best = {cand: float("inf") for cand in CANDIDATES}
    for _ in range(_ROUNDS + 1):  # interleaved rounds (the first builds and warms up): a
        for cand in CANDIDATES:   # busy machine slows every candidate alike
            best[cand] = min(best[cand], _time_candidate(dev, dtype, *cand, a, b, c))
    return min(best, key=best.get)


def cache_key(dev, dtype: str, lanes: int) -> str:
    """The cache entry of ``dev``'s blocks for ``dtype`` at ``lanes`` lanes (the lane count
    named where it is not the 32-byte one: the best block differs)."""
    from fastnn_opencl import linalg

    kind = dtype if lanes == linalg.vector_lanes(dev, dtype) else f"{dtype}x{lanes}"
    return f"{dev.name}|{kind}|{VERSION}"


def blocks(dev, dtype: str) -> tuple:
    """(TM, VN) of the packed kernel on ``dev``: from memory, the disk cache, or a tuning run."""
    if _forced[0] is not None:
        return _forced[0]
    from fastnn_opencl.linalg import packed_lanes

    memo = (dev.name, dtype, packed_lanes(dev, dtype))
    found = _chosen.get(memo)
    if found is not None:
        return found
    with _lock:
        found = _chosen.get(memo)
        if found is None:
            key = cache_key(dev, dtype, memo[2])
            if os.environ.get("FASTNN_OPENCL_TUNE", "1") == "0":
                found = CANDIDATES[0]
            else:
                entry = read_cache().get(key)
                if _valid(entry):
                    found = tuple(entry)
                else:
                    found = tune(dev, dtype)
                    write_cache(key, found)
            _chosen[memo] = found
    return found
