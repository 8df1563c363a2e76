"""Per-device block sizes of the CPU GEMM kernel (``k_gemm_cpu``), chosen by a small timed run.

The first GEMM on a CPU device times a few (TM, VN) blocks (TM rows by VN vectors of the
device's native width per work-item) on one 256^3 product and keeps the fastest. The
choice is cached on disk, keyed by the device's name and the dtype, in
``<fastnn cache>/opencl_gemm.json`` (``FASTNN_CACHE`` overrides the folder); a corrupt
or unreadable cache is ignored with a warning and rewritten. ``FASTNN_OPENCL_TUNE=0``
skips the run and uses the defaults.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings

import numpy as np

from fastnn.api.certificates import cache_dir

CANDIDATES = ((4, 4), (4, 2), (8, 2), (2, 4))  # (TM, VN); the first is the default
CACHE_NAME = "opencl_gemm.json"
_SIZE = 256
_chosen: dict = {}
_lock = threading.Lock()


def cache_path():
    return cache_dir() / CACHE_NAME


def _read_cache() -> dict:
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


def _write_cache(key: str, choice: tuple) -> None:
    path = cache_path()
    data = _read_cache()
    data[key] = list(choice)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache folder: tune again next time
        warnings.warn(f"opencl: cannot write the GEMM tuning cache {path} ({exc})",
                      stacklevel=3)


def _time_candidate(dev, dtype: str, tm: int, vw: int, vn: int, a, b, c) -> float:
    """Best of three wall times of one _SIZE^3 product with this block."""
    from fastnn_opencl.linalg import _ARG_DTYPES, FILE
    from fastnn_opencl.runtime import CL_TYPES

    defines = (("T", CL_TYPES[dtype]), ("TM", tm), ("VW", vw), ("VN", vn))
    kernel = dev.kernel(FILE, "k_gemm_cpu", defines, _ARG_DTYPES)
    n = _SIZE
    size = (-(-n // tm), -(-n // (vw * vn)), 1)

    def run():
        kernel(dev.queue, size, None, n, n, n, a.data, 0, 0, n, 1, b.data, 0, 0, n,
               c.data, 0, 0, n)

    run()
    dev.queue.finish()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run()
        dev.queue.finish()
        best = min(best, time.perf_counter() - start)
    return best


def tune(dev, dtype: str) -> tuple:
    """(TM, VN) of the fastest candidate on ``dev`` for ``dtype`` (no cache involved)."""
    from fastnn_opencl.misc import from_numpy

    vw = max(4, dev.vector_width(dtype))
    rng = np.random.default_rng(0)
    a, b = (from_numpy(rng.standard_normal((_SIZE, _SIZE)).astype(dtype), dev.index)
            for _ in range(2))
    c = dev.empty((_SIZE, _SIZE), dtype)
    times = {cand: _time_candidate(dev, dtype, cand[0], vw, cand[1], a, b, c)
             for cand in CANDIDATES}
    return min(times, key=times.get)


def blocks(dev, dtype: str) -> tuple:
    """(TM, VN) for wide outputs on ``dev``: from memory, the disk cache, or a tuning run."""
    key = f"{dev.name}|{dtype}"
    found = _chosen.get(key)
    if found is not None:
        return found
    with _lock:
        found = _chosen.get(key)
        if found is None:
            if os.environ.get("FASTNN_OPENCL_TUNE", "1") == "0":
                found = CANDIDATES[0]
            else:
                entry = _read_cache().get(key)
                if _valid(entry):
                    found = tuple(entry)
                else:
                    found = tune(dev, dtype)
                    _write_cache(key, found)
            _chosen[key] = found
    return found
