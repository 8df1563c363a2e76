"""Gradient clipping's hooks (fastnn_cuda/clip.py, cu/clip.cu) from their own call sites,
without a GPU: NumPy stands in for cupy, and each launch runs the kernel built for the host
with every thread of a block an OS thread (real barriers and warp shuffles, two warps a
block, at most three blocks an array, so that the grid-stride loops go round and a table
yields several parts an array). ``total_norm`` is held to the float64 norm of the
conformance samples (and their strided twins, the cupy fallback), ``clip_grads_with_norm``
to the conformance suite's own check, both against the composites too.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from fastnn_cuda import clip, kernels, launch, optim

from fastnn.api import composite, registry
from fastnn.conformance import cases_clip
from fastnn.conformance.compare import ACCUMULATING, Mismatch, assert_close
from tests.backends.cuda.host_build import (
    THREADED_SHIM,
    DevArray,
    build_threaded,
    compile_library,
    launch_on_host,
    require_compiler,
)
from tests.backends.cuda.test_cuda_call_sites_on_host import _dev, _NumpyAsCupy

require_compiler()

DTYPES = ["float32", "float64", "float16"]


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_threaded(tmp_path_factory.mktemp("clip"), ("clip.cu",))


def _small_launches(monkeypatch):
    monkeypatch.setattr(clip, "cp", _NumpyAsCupy())
    monkeypatch.setattr(launch, "STEP_THREADS", 64)
    monkeypatch.setattr(launch, "STEP_MAX_BLOCKS_PER_TENSOR", 3)
    monkeypatch.setattr(launch, "ONE_BLOCK_THREADS", 64)
    monkeypatch.setattr(optim, "_TABLES", {})  # (tables planned under other block counts)


@pytest.fixture
def on_host(libs, monkeypatch):
    _small_launches(monkeypatch)
    return launch_on_host(monkeypatch, libs)


class _Ops:
    """The cuda backend's two clipping hooks; what the checks only use to lay out their
    inputs and to run the composites is the NumPy backend's."""

    total_norm = staticmethod(clip.total_norm)
    clip_grads_with_norm = staticmethod(clip.clip_grads_with_norm)
    to_numpy = staticmethod(np.array)

    def __init__(self):
        self._cpu = registry.get_backend("cpu").ops

    @staticmethod
    def from_numpy(array, index):
        return _dev(np.array(array, copy=True))

    @staticmethod
    def transpose(x, axes):
        return _dev(np.transpose(x, axes))

    def __getattr__(self, name):
        return getattr(self._cpu, name)


def _device():
    record = types.SimpleNamespace(dtypes=DTYPES)
    return types.SimpleNamespace(ops=_Ops(), index=0, backend=types.SimpleNamespace(record=record))


def _strided(a):
    """The values of ``a`` in a layout the kernels do not take (every other element of a
    buffer twice its size; a 0-d or one-element array stays contiguous all the same)."""
    return np.stack([a, a], -1)[..., 0] if a.ndim else a


def _samples():
    rng = np.random.default_rng(0)
    out = cases_clip._samples(rng)
    for dtype in DTYPES:
        out += [(dtype, s) for s in cases_clip._edges(rng, dtype)]
    return [s if isinstance(s, tuple) else (None, s) for s in out]


def _check_norm(arrays, norm_type, what):
    want_dtype = "float64" if any(a.dtype == np.float64 for a in arrays) else "float32"
    got = clip.total_norm([_dev(a) for a in arrays], norm_type)
    assert got.shape == () and got.dtype == want_dtype, (what, got.dtype, got.shape)
    tol = ACCUMULATING[want_dtype]
    assert_close(got, np.asarray(cases_clip._norm_ref(*arrays, norm_type=norm_type)), *tol,
                 what)
    again = composite.total_norm(_Ops(), [_dev(a) for a in arrays], norm_type)
    assert_close(got, again, *tol, what + " vs the composite")


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_total_norm_of_the_conformance_samples(on_host, dtype, layout):
    for own, sample in _samples():
        if own not in (None, dtype):
            continue
        arrays = [np.asarray(a, dtype) for a in sample.args]
        if layout == "strided":
            arrays = [_strided(a) for a in arrays]
        _check_norm(arrays, sample.params["norm_type"], f"total_norm, {dtype}, {sample.label}")
    if dtype == "float16":
        assert set(on_host) == {"norm_finish"}  # cupy's calls, then the finishing block
    else:
        assert set(on_host) == {"norm_parts", "norm_finish"}


@pytest.mark.parametrize("norm_type", cases_clip.NORMS)
def test_one_launch_a_table_and_one_to_finish(on_host, norm_type):
    """Two tables' worth of float32 arrays (one of them large, three blocks of parts),
    float64 and float16 ones, a strided one: a norm_parts launch a table and dtype, the
    float16 and strided arrays by cupy, one norm_finish in float64."""
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=(700,)).astype(np.float32)]
    arrays += [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(launch.MAX_TENSORS)]
    arrays += [rng.normal(size=(9,)), rng.normal(size=(3,)).astype(np.float16),
               _strided(rng.normal(size=(4, 6)).astype(np.float32))]
    _check_norm(arrays, norm_type, f"total_norm of {len(arrays)} arrays, p={norm_type}")
    assert on_host == ["norm_parts", "norm_parts", "norm_parts", "norm_finish"]


def test_a_float32_sum_past_its_range_is_inf(on_host):
    """The parts add in double, but the sum is rounded to float32 before the root, as the
    composite (and PyTorch's float32 norm) takes it."""
    big = np.full((4,), 1e20, np.float32)
    assert np.isinf(clip.total_norm([_dev(big)], 2.0))
    assert clip.total_norm([_dev(big)], math.inf) == np.float32(1e20)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_passes_the_conformance_check(on_host, dtype):
    """Totals over and under max_norm, NaN and infinite ones, max_norm 0, a transposed and
    a size-0 gradient, an infinite value, two dtypes in one call (with total_norm)."""
    cases_clip._check_clip(_device(), dtype, np.random.default_rng(2))
    if dtype != "float16":
        assert "clip_scale" in on_host


def test_clip_makes_one_launch_a_table(on_host):
    """Two tables of float32 gradients under a float64 total: c is computed in float64,
    then rounded to float32 once (a total where computing c in float32 gives another
    float32), and each value is that c times the gradient, exactly."""
    rng = np.random.default_rng(3)
    grads = [rng.normal(size=(6, 5)).astype(np.float32) for _ in range(launch.MAX_TENSORS + 1)]
    total = np.asarray(3.1455727863931964)
    got = clip.clip_grads_with_norm([_dev(g) for g in grads], 2.0, _dev(total))
    coef = np.float32(min(2.0 / (total + 1e-6), 1.0))
    assert coef != np.float32(2.0) / (np.float32(total) + np.float32(1e-6))
    for a, g in zip(got, grads):
        assert a.dtype == g.dtype
        np.testing.assert_array_equal(a, g * coef)
    assert on_host == ["clip_scale", "clip_scale"]


class _NoReads(DevArray):
    """A device array whose value cannot reach the host: what would make cupy wait."""

    def _read(self, *args):
        raise AssertionError("a hook read a device value back")

    __float__ = __int__ = __bool__ = __index__ = item = tolist = _read


def test_neither_hook_reads_a_value_back(on_host):
    rng = np.random.default_rng(4)
    host = [rng.normal(size=(3, 4)), rng.normal(size=(5,)).astype(np.float16),
            _strided(rng.normal(size=(4, 2)))]
    arrays = [a.view(_NoReads) for a in host]
    for norm_type in cases_clip.NORMS:
        total = clip.total_norm(arrays, norm_type).view(_NoReads)
        clip.clip_grads_with_norm(arrays, 1.0, total)


@pytest.fixture(scope="module")
def fmax_libs(tmp_path_factory):
    """clip.cu with its max through CUDA's fmax, which drops a NaN (a bug planted to show
    that the checks see it)."""
    text = kernels.source("clip.cu")
    assert text.count("nan_max(acc, a)") == 1
    text = text.replace("nan_max(acc, a)", "fmax(acc, a)")
    lib = compile_library(tmp_path_factory.mktemp("clip_fmax"), "threaded_clip_fmax",
                          THREADED_SHIM + text, flags=("-pthread",))
    return {"clip.cu": lib}


def test_a_max_that_drops_nan_fails_the_checks(fmax_libs, monkeypatch):
    _small_launches(monkeypatch)
    launch_on_host(monkeypatch, fmax_libs)
    arrays = [np.array([1.0, np.nan, 2.0], np.float32), np.ones((2, 2), np.float32)]
    with pytest.raises(Mismatch, match="NaN/Inf placement"):
        _check_norm(arrays, math.inf, "total_norm with a NaN, p=inf")
