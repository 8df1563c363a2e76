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

The unpacked kernel (``k_gemm_cpu``: products below the packing threshold) gets its own
(TM, VN), timed on small products the models run (keyed ``<device>|<dtype>|direct1``, or
``<device>|float32x16|direct2`` where it runs 16-lane vectors as the packed kernel does):
on PoCL 3.0 with AVX-512 its old fixed 6 x 2 block ran 32 x 64 @ 64 x 256 at 40 GFLOP/s
and 4 x 2 at 85 (6-row blocks also leave ragged row edges on the models' power-of-two
batches).
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings

import numpy as np

from fastnn.api.certificates import cache_dir

# (TM, VN); the first is the default. With 16-lane vectors (PoCL 3.0, AVX-512) 6 x 1 ran
# 384^3 at 102 GFLOP/s on one core, 5 x 1 and 2 x 2 at 93-99, the 8 x 1 that tuning had
# picked from the first four at 59, 6 x 2 at 53 (the models' mid-size shapes alike).
CANDIDATES = ((6, 2), (6, 1), (5, 1), (2, 2), (4, 3), (4, 2), (8, 1))
CACHE_NAME = "opencl_gemm.json"
VERSION = "packed3"  # part of the cache key: new candidates or kernels tune afresh
_SIZE = 384
_ROUNDS = 5
DIRECT_CANDIDATES = ((4, 2), (2, 4), (5, 2), (6, 2))  # (TM, VN) of k_gemm_cpu; first: default
DIRECT_VERSION = "direct1"
# ... with 16-lane vectors (gemm_wide): on PoCL 3.1 (Zen 4) 4 x 2 ran 128x10 @ 10x512,
# 10x128 @ 128x512 (A transposed) and 32x64 @ 64x256 in 13, 15 and 9.5 us of kernel time
# (one thread), the 8-lane 2 x 4 block tuned there in 18, 16-23 and 11-14
DIRECT_WIDE_CANDIDATES = ((4, 2), (4, 1), (8, 1), (2, 2), (6, 1))
DIRECT_WIDE_VERSION = "direct2"
_DIRECT_SHAPES = ((32, 64, 256), (64, 128, 96), (128, 10, 512))  # (m, k, n), none packed
_DIRECT_REPS = 20
_chosen: dict = {}
_lock = threading.RLock()  # a tuning run may ask for the other kernel's block


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


def _valid(entry, candidates=CANDIDATES) -> bool:
    return isinstance(entry, list) and len(entry) == 2 and tuple(entry) in candidates


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
_forced_direct: list = [None]  # the unpacked kernel's block a tuning run times


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

    lanes = packed_lanes(dev, dtype)
    return _cached((dev.name, dtype, lanes), cache_key(dev, dtype, lanes), CANDIDATES,
                   lambda: tune(dev, dtype))


def direct_candidates(dev, dtype: str) -> tuple:
    """The unpacked kernel's (TM, VN) candidates and cache version for its lane count."""
    from fastnn_opencl.linalg import packed_lanes

    if packed_lanes(dev, dtype) >= 16:
        return DIRECT_WIDE_CANDIDATES, DIRECT_WIDE_VERSION
    return DIRECT_CANDIDATES, DIRECT_VERSION


def direct_blocks(dev, dtype: str) -> tuple:
    """(TM, VN) of the unpacked kernel ``k_gemm_cpu`` on ``dev`` (as :func:`blocks`; 16-lane
    vectors have their own candidates and cache entry, ``<device>|<dtype>x16|direct2``)."""
    if _forced_direct[0] is not None:
        return _forced_direct[0]
    candidates, version = direct_candidates(dev, dtype)
    kind = dtype if version == DIRECT_VERSION else f"{dtype}x16"
    return _cached((dev.name, dtype, version), f"{dev.name}|{kind}|{version}", candidates,
                   lambda: tune_direct(dev, dtype))


def _cached(memo: tuple, key: str, candidates: tuple, run) -> tuple:
    """The block kept under ``memo``, else the disk cache's under ``key``, else ``run()``'s
    (written to the cache); the first candidate where tuning is off."""
    found = _chosen.get(memo)
    if found is not None:
        return found
    with _lock:
        found = _chosen.get(memo)
        if found is None:
            if os.environ.get("FASTNN_OPENCL_TUNE", "1") == "0":
                found = candidates[0]
            else:
                entry = read_cache().get(key)
                if _valid(entry, candidates):
                    found = tuple(entry)
                else:
                    found = run()
                    write_cache(key, found)
            _chosen[memo] = found
    return found


def tune_direct(dev, dtype: str) -> tuple:
    """(TM, VN) of the fastest unpacked-kernel candidate on ``dev`` (for its lane count:
    :func:`direct_candidates`): _DIRECT_REPS launches of
    each of _DIRECT_SHAPES per round, best of _ROUNDS interleaved rounds (no cache)."""
    from fastnn_opencl import linalg
    from fastnn_opencl.misc import from_numpy

    rng = np.random.default_rng(0)
    cases = []
    for m, k, n in _DIRECT_SHAPES:
        a, b = (from_numpy(rng.standard_normal(s).astype(dtype), dev.index)
                for s in ((m, k), (k, n)))
        cases.append((a, b, dev.empty((m, n), dtype), m, k, n))
    candidates = direct_candidates(dev, dtype)[0]
    best = {cand: float("inf") for cand in candidates}
    for _ in range(_ROUNDS + 1):  # the first round builds and warms up
        for cand in candidates:
            _forced_direct[0] = cand
            try:
                start = time.perf_counter()
                for a, b, c, m, k, n in cases:
                    for _ in range(_DIRECT_REPS):
                        linalg.gemm(a, b, c, m, n, k, 1, (0, k, 1), (0, n, 1), (0, n, 1))
                dev.queue.finish()
                best[cand] = min(best[cand], time.perf_counter() - start)
            finally:
                _forced_direct[0] = None
    return min(best, key=best.get)
