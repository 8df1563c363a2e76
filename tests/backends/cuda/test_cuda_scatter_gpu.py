"""The ordered float scatter_add on a real GPU: equal to np.add.at bit for bit, every call.

Skips (with cupy's reason) where no usable CUDA device exists; the host tests
(test_cuda_scatter_on_host.py) check the same kernels' text without one.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import indexing, scatter

from tests.backends.cuda.gpu_common import cupy_or_skip

cp = cupy_or_skip()
pytestmark = pytest.mark.gpu


def bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def reference(base, axis, index, src):
    out = base.copy()
    keep = (index >= 0) & (index < base.shape[axis])
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    np.add.at(out, tuple(np.broadcast_to(g, index.shape)[keep] for g in grids), src[keep])
    return out


@pytest.mark.parametrize("plan", ["auto", "lines", "groups", "sort"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis,m", [((7,), 0, 5000), ((50, 64), 0, 4096),
                                          ((64, 50), 1, 4096), ((3, 9, 300), 1, 700)])
def test_gpu_scatter_add_is_add_at_every_call(monkeypatch, plan, dtype, shape, axis, m):
    if plan != "auto":
        forced = {"lines": 1, "groups": 5, "sort": 0}[plan]
        monkeypatch.setattr(scatter, "plan", lambda lines, m, n: forced)
    rng = np.random.default_rng(m)
    ishape = shape[:axis] + (m,) + shape[axis + 1:]
    index = rng.integers(-1, shape[axis] + 1, ishape)
    src = (rng.standard_normal(ishape) * 10.0 ** rng.uniform(-4, 4, ishape)).astype(dtype)
    base = rng.standard_normal(shape).astype(dtype)
    want = bits(reference(base, axis, index, src))
    for _ in range(3):  # atomics would differ between calls; the ordered sum must not
        got = indexing.scatter_add(cp.asarray(base), axis, cp.asarray(index), cp.asarray(src))
        np.testing.assert_array_equal(bits(cp.asnumpy(got)), want)
