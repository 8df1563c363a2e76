"""The CUDA backend's ordered float scatter_add, run on the host, against np.add.at bit for bit.

``cu/scatter.cu`` is built with g++ under the serial shim (host_build.py) and the hook
(``indexing.scatter_add`` -> ``scatter.ordered_scatter_add``) runs as it is, NumPy
standing in for cupy and every block and thread of each planned launch run in turn.
Both plans (a walk per line; sorted segments per destination) must equal ``np.add.at``
(the cpu backend) bit for bit, so that a replayed compiled step equals its eager run.
The values span many magnitudes, so that another order of addition changes the bits
(checked below: the test can fail).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import indexing, kernels, launch, scatter

from tests.backends.cuda.cupy_standin import CupyStandIn
from tests.backends.cuda.host_build import (
    SERIAL_SHIM,
    DevArray,
    c_arg,
    compile_library,
    require_compiler,
    run_serial,
)

require_compiler()

@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    text = SERIAL_SHIM + kernels.source("scatter.cu").replace('#line 1 "', '#line 1 "host_')
    return {"scatter.cu": compile_library(tmp_path_factory.mktemp("scatter"), "scatter", text)}


FORCED = {"lines": 1, "groups": 3, "sort": 0, "tiny-groups": 3, "tiny-sort": 0}


@pytest.fixture(params=["auto", "lines", "groups", "sort", "tiny-groups", "tiny-sort"])
def on_host(request, libs, monkeypatch):
    """The hook on NumPy with host-built kernels. "auto" keeps the plan the hook picks; the
    others force one (a walk per line, three groups per line, the sort), "tiny-" on a grid
    of one block of four threads, so that every grid-stride loop goes round."""
    monkeypatch.setattr(indexing, "cp", CupyStandIn())
    monkeypatch.setattr(scatter, "cp", CupyStandIn())
    launches = []

    def function(base, dtype, device_id):
        assert device_id == 0

        def run(grid, block, args):
            launches.append(base)
            run_serial(libs, base, str(dtype), grid, block, [c_arg(a) for a in args])

        return run

    monkeypatch.setattr(kernels, "function", function)
    if request.param in FORCED:
        monkeypatch.setattr(scatter, "plan", lambda lines, m, n: FORCED[request.param])
    if request.param.startswith("tiny"):
        monkeypatch.setattr(launch, "FLAT_THREADS", 4)
        monkeypatch.setattr(launch, "FLAT_MAX_BLOCKS", 1)
    return SimpleNamespace(plan=request.param, launches=launches)


def launched(lines, m, n):
    """The kernel the hook launches for its plan."""
    return "scatter_add_lines" if scatter.plan(lines, m, n) else "scatter_add_segments"


def spread(rng, shape, dtype):
    """Values over eight decades: their sum's last bits depend on the order of addition."""
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4, shape)).astype(dtype)


def reference(base, axis, index, src):
    """np.add.at, as the cpu backend adds (out-of-range entries skipped)."""
    out = base.copy()
    keep = (index >= 0) & (index < base.shape[axis])
    grids = list(np.indices(index.shape, sparse=True))
    grids[axis] = index
    coords = tuple(np.broadcast_to(g, index.shape)[keep] for g in grids)
    np.add.at(out, coords, src[keep])
    return out


def bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


CASES = [  # (base shape, axis, entries along axis)
    ((7,), 0, 120),  # 1-d
    ((6, 5), 0, 90),  # 2-d along rows (an embedding gradient's layout)
    ((5, 6), 1, 90),  # 2-d along columns
    ((3, 6, 4), 1, 70),  # 3-d along the middle axis
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis,m", CASES)
def test_equals_add_at_bit_for_bit(on_host, dtype, shape, axis, m):
    rng = np.random.default_rng(sum(shape) + axis)
    n = shape[axis]
    ishape = shape[:axis] + (m,) + shape[axis + 1:]
    index = rng.integers(-2, n + 2, ishape)  # repeats, and a few out of range
    src = spread(rng, ishape, dtype)
    base = spread(rng, shape, dtype).view(DevArray)  # adds onto what is there, in order
    got = indexing.scatter_add(base, axis, index, src)
    want = reference(np.asarray(base), axis, index, src)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(np.asarray(got)), bits(want))
    np.testing.assert_array_equal(np.asarray(base), np.asarray(base.copy()))  # not written
    assert on_host.launches == [launched(int(np.prod(ishape)) // m, m, n)]


def test_order_of_addition_matters_for_these_values():
    """The cases above would catch a kernel that adds in another order: here reversing the
    entries of one case changes the bits of the sum."""
    rng = np.random.default_rng(1)
    index = rng.integers(0, 7, 120)
    src = spread(rng, (120,), "float32")
    forward = reference(np.zeros(7, "float32"), 0, index, src)
    backward = reference(np.zeros(7, "float32"), 0, index[::-1], src[::-1])
    assert (bits(forward) != bits(backward)).any()


def test_embedding_gradient_shape_takes_the_lines_plan_in_groups(on_host):
    """Few columns and a long walk (the wte gradient of a small GPT): the hook spreads each
    column's destinations over groups of threads (capturable), not one walk per column."""
    if on_host.plan != "auto":
        pytest.skip("checks the plan the hook picks")
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 11, 300)
    index = np.broadcast_to(tokens[:, None], (300, 8))
    src = spread(rng, (300, 8), "float32")
    base = np.zeros((11, 8), "float32").view(DevArray)
    got = indexing.scatter_add(base, 0, index, src)
    np.testing.assert_array_equal(bits(np.asarray(got)), bits(reference(base, 0, index, src)))
    assert on_host.launches == ["scatter_add_lines"]
    assert scatter.plan(8, 300, 11) == 11


def test_nothing_in_range_and_empty_index(on_host):
    base = np.arange(6.0).reshape(2, 3).view(DevArray)
    index = np.full((2, 100), 5)  # all out of range
    got = indexing.scatter_add(base, 1, index, np.ones((2, 100)))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(base))
    empty = indexing.scatter_add(base, 1, np.zeros((2, 0), np.int64), np.zeros((2, 0)))
    np.testing.assert_array_equal(np.asarray(empty), np.asarray(base))


def test_integers_keep_the_atomic_path(on_host, monkeypatch):
    monkeypatch.setattr(indexing, "_add_at", np.add.at)
    base = np.arange(12, dtype=np.int64).reshape(3, 4).view(DevArray)
    index = np.array([[0, 2, 2, 0], [1, 1, 1, 9]])
    src = np.arange(8, dtype=np.int64).reshape(2, 4) * 1000
    got = indexing.scatter_add(base, 0, index, src)
    np.testing.assert_array_equal(np.asarray(got), reference(np.asarray(base), 0, index, src))
    assert on_host.launches == []


@pytest.mark.parametrize("lines,m,n,want", [
    (64, 16384, 65, 65),  # a char-level GPT's wte gradient: a group per token
    (768, 8192, 50304, 11),  # a GPT-2 sized one: enough groups for THREADS threads
    (64, 64, 1000, 1),  # short walks: one thread per line
    (8192, 10**6, 5, 1),  # many lines
    (1, 10**6, 10**5, 0),  # a long 1-d scatter: sorted
    (1, 5000, 7, 7),  # a short 1-d scatter into few destinations: a group each
])
def test_plan_choice(lines, m, n, want):
    assert scatter.plan(lines, m, n) == want
