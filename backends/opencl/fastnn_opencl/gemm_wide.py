"""Whether the packed CPU GEMM may use 64-byte float vectors (16 floats: AVX-512) on a device.

PoCL reports 16 native float lanes on AVX-512 machines, but its LLVM prefers 256-bit
vectors there: a ``float16`` is split into two 8-lane registers unless the kernel carries
``min_vector_width(512)`` (``kernels/matmul.cl`` adds it where VW is 16); with it the
packed kernel runs on 16-lane registers (measured ~1.5-2x the 8-lane kernel's GFLOP/s on a
Xeon with AVX-512, PoCL 3.0 of the pip wheel). Some PoCL / LLVM builds abort the whole
process on 64-byte vectors (``LLVM ERROR: Cannot select ... fma`` was seen on one), so the
first use on a device builds and runs the wide kernel in a child process and checks its
product against NumPy; the verdict is cached with the block sizes (:mod:`gemm_tune`'s file,
keyed by device name). float64 keeps 32-byte vectors (double8 breaks PoCL).

``FASTNN_OPENCL_WIDE=0`` turns wide vectors off, ``=1`` on without the probe (the child
process runs with it); ``FASTNN_OPENCL_TUNE=0`` skips the probe and stays narrow.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

LANES = 16
VERSION = "wide1"  # part of the cache key: a new probe decides afresh
_TIMEOUT = 180
_verdicts: dict = {}
_lock = threading.Lock()

_PROBE = """
import sys
import numpy as np
from fastnn_opencl import linalg
from fastnn_opencl.misc import from_numpy, to_numpy
from fastnn_opencl.runtime import state
index = int(sys.argv[1])
dev = state(index)
assert linalg.packed_lanes(dev, "float32") == 16
rng = np.random.default_rng(0)
m, k, n = 37, 700, 83  # edges in m and n, k across the KC chunk
a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
c = dev.empty((m, n), "float32")
linalg.gemm_packed(from_numpy(a.astype(np.float32), index), from_numpy(b.astype(np.float32),
                   index), c, m, n, k, 1, (0, k, 1), (0, n, 1), (0, n, 1))
err = np.abs(to_numpy(c) - a @ b).max()
sys.exit(0 if err <= 1e-4 * k ** 0.5 * np.abs(a @ b).max() else 3)
"""


def enabled(dev) -> bool:
    """Whether ``dev`` runs the packed float32 kernel with 16-lane vectors (see above)."""
    forced = os.environ.get("FASTNN_OPENCL_WIDE", "")
    if forced in ("0", "1"):
        return forced == "1"
    found = _verdicts.get(dev.name)
    if found is not None:
        return found
    with _lock:
        found = _verdicts.get(dev.name)
        if found is None:
            found = _decide(dev)
            _verdicts[dev.name] = found
    return found


def _decide(dev) -> bool:
    from fastnn_opencl import gemm_tune

    if os.environ.get("FASTNN_OPENCL_TUNE", "1") == "0":
        return False
    key = f"{dev.name}|{VERSION}"
    entry = gemm_tune.read_cache().get(key)
    if isinstance(entry, bool):
        return entry
    verdict = probe(dev)
    gemm_tune.write_cache(key, verdict)
    return verdict


def probe(dev) -> bool:
    """Build and run the wide packed kernel on ``dev`` in a child process: True if its
    product is right, False if it fails, crashes or hangs."""
    env = dict(os.environ, FASTNN_OPENCL_WIDE="1", FASTNN_OPENCL_TUNE="0",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(dev.index)], env=env,
                              capture_output=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
