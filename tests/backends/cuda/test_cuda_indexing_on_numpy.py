"""The CUDA backend's indexing and scan hooks, run with NumPy standing in for cupy.

cupy mirrors NumPy, so running fastnn_cuda.indexing on NumPy checks its index math here
against the NumPy backend (the reference), out-of-range indices included.
"""

from __future__ import annotations

import fastnn_cpu
import numpy as np
import pytest
from fastnn_cpu import indexing as cpu_indexing
from fastnn_cuda import indexing, primitives

from fastnn.api import registry
from tests.backends.cuda.cupy_standin import CupyStandIn, add_at


@pytest.fixture(autouse=True)
def numpy_as_cupy(monkeypatch):
    monkeypatch.setattr(indexing, "cp", CupyStandIn())
    monkeypatch.setattr(indexing, "_add_at", add_at)
    # the atomic path (integers, float16); the ordered float kernels run on the host in
    # test_cuda_scatter_on_host.py
    monkeypatch.setattr(indexing.kernels, "has_kernel", lambda dtype: False)


rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4, 5))


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize("box", [((0, 1, 0), (3, 4, 5), (1, 2, 2)), ((2, 0, 4), (3, 0, 5),
                                                                      (1, 1, 1))])
def test_slice_and_slice_scatter(box):
    part = indexing.slice(X, *box)
    same(part, cpu_indexing.slice(X, *box))
    src = rng.standard_normal(part.shape)
    same(indexing.slice_scatter(X, src, *box), cpu_indexing.slice_scatter(X, src, *box))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_and_scatter_add_with_repeats_and_out_of_range(axis):
    shape = list(X.shape)
    shape[axis] = 7
    index = rng.integers(-2, X.shape[axis] + 2, shape)  # some out of range on purpose
    same(indexing.gather(X, axis, index), cpu_indexing.gather(X, axis, index))
    src = rng.standard_normal(shape)
    np.testing.assert_allclose(indexing.scatter_add(X, axis, index, src),
                               cpu_indexing.scatter_add(X, axis, index, src), rtol=1e-14)


@pytest.mark.parametrize("dtype", ["float16", "int32", "int64", "uint8"])
@pytest.mark.parametrize("axis", [0, 2])
def test_scatter_add_without_a_kernel(dtype, axis):
    """float16 and the integers take cupyx's scatter_add (no ordered kernel): repeated
    indices accumulate, out-of-range ones are skipped, as the NumPy backend does."""
    shape = list(X.shape)
    shape[axis] = 6
    index = rng.integers(-1, X.shape[axis] + 1, shape)
    base = (X * 4).astype(dtype)
    src = rng.integers(0, 5, shape).astype(dtype)
    same(indexing.scatter_add(base, axis, index, src),
         cpu_indexing.scatter_add(base, axis, index, src))
    src_broadcast = np.ones((1,) * X.ndim, dtype)  # a src that broadcasts to the index
    same(indexing.scatter_add(base, axis, index, src_broadcast),
         cpu_indexing.scatter_add(base, axis, index, np.broadcast_to(src_broadcast, shape)))


def test_index_select_cat_cumsum_prod():
    index = np.array([2, 0, 2, 1])
    same(indexing.index_select(X, 0, index), cpu_indexing.index_select(X, 0, index))
    outside = indexing.index_select(X, 1, np.array([1, 4, -1]))  # never read: zeros
    same(outside[:, 0], X[:, 1])
    assert not outside[:, 1:].any()
    same(indexing.cat([X, X[:, :1]], 1), cpu_indexing.cat([X, X[:, :1]], 1))
    same(indexing.cumsum(X, 1), cpu_indexing.cumsum(X, 1))
    same(indexing.prod(X, (0, 2), True), cpu_indexing.prod(X, (0, 2), True))
    same(indexing.prod(np.zeros((2, 0)), (1,), False), np.ones(2))


def test_math_and_bitwise(monkeypatch):
    monkeypatch.setattr(primitives, "cp", CupyStandIn())
    reference = registry.hook_namespace(fastnn_cpu)
    same(primitives.floor(X), np.floor(X))
    same(primitives.sin(X), reference.sin(X))
    same(primitives.cos(X), reference.cos(X))
    a, b = rng.integers(-50, 50, (4, 5)), rng.integers(1, 9, (5,)) * rng.choice([-1, 1], 5)
    same(primitives.floor_divide(a, b), reference.floor_divide(a, b))
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        same(getattr(primitives, op)(a, b), getattr(reference, op)(a, b))
        same(getattr(primitives, op)(a > 0, b > 0), getattr(reference, op)(a > 0, b > 0))
