"""The CUDA backend's attention hooks on their kernels (cu/attention.cu) without a GPU:
NumPy stands in for cupy (the GEMMs), and the two row kernels run built for the host with
every thread of a block an OS thread (two warps a block, rows longer than a block). Results
must match NumPy in float64 and the NumPy backend's hooks, for every kind of mask the
hook takes: none, causal (one (L, S) plane for every head), a key-padding row, and one per
batch element (broadcast, then read whole)."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cpu import sdpa as cpu_sdpa
from fastnn_cuda import launch, sdpa

from tests.backends.cuda import references as refs
from tests.backends.cuda.host_build import build_threaded, launch_on_host, require_compiler
from tests.backends.cuda.test_cuda_call_sites_on_host import _dev, _NumpyAsCupy

require_compiler()


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return build_threaded(tmp_path_factory.mktemp("attention"), ("attention.cu",))


@pytest.fixture
def on_host(libs, monkeypatch):
    monkeypatch.setattr(sdpa, "cp", _NumpyAsCupy())
    launches = launch_on_host(monkeypatch, libs)
    monkeypatch.setattr(launch, "ROW_THREADS_MAX", 64)
    return launches


B, H, L, S, E = 2, 3, 5, 70, 4  # 70 keys: a row is longer than a block of 64 threads
RNG = np.random.default_rng(0)
MASKS = {
    "none": None,
    "causal": np.tril(np.ones((L, S), bool), k=S - L),
    "key padding": (np.arange(S) < 50)[None],  # (1, S)
    "per batch": RNG.random((B, 1, L, S)) < 0.7,
}
MASKS["per batch"][..., 0] = True  # at least one key a row, as the hook requires


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mask_name", list(MASKS))
def test_attention_kernels_match_float64(on_host, dtype, mask_name):
    mask = MASKS[mask_name]
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((B, H, n, E)).astype(dtype) for n in (L, S, S))
    k = np.ascontiguousarray(k.swapaxes(-1, -2)).swapaxes(-1, -2)  # a strided operand
    grad = np.broadcast_to(rng.standard_normal(E).astype(dtype), (B, H, L, E))
    scale = 0.7
    out, weights = sdpa.attention(_dev(q), _dev(k), _dev(v), mask, scale)
    grads = sdpa.attention_backward(_dev(q), _dev(k), _dev(v), weights, _dev(grad), scale)
    assert on_host == ["attention_softmax", "attention_softmax_backward"]
    want_out, want_w, want_grads = refs.attention(q, k, v, mask, scale, grad)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-13)
    for got, want in zip((out, weights, *grads), (want_out, want_w, *want_grads)):
        assert got.dtype == q.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)
    if mask is not None:  # masked weights are exactly 0
        assert (np.asarray(weights)[~np.broadcast_to(mask, weights.shape)] == 0).all()
    cpu_out, cpu_w = cpu_sdpa.attention(q, k, v, mask, scale)
    np.testing.assert_allclose(weights, cpu_w, **tol)
    for got, want in zip(grads, cpu_sdpa.attention_backward(q, k, v, cpu_w, grad, scale)):
        np.testing.assert_allclose(got, want, **tol)


def test_mask_rows_keeps_a_plane_when_it_can(on_host):
    shape = (B, H, L, S)
    plane, period = sdpa.mask_rows(MASKS["causal"], shape)
    assert plane.shape == (L, S) and period == L
    plane, period = sdpa.mask_rows(MASKS["causal"][None, None], shape)
    assert plane.shape == (L, S) and period == L
    for pad in (MASKS["key padding"], MASKS["key padding"][0]):  # (1, S) and (S,)
        row, period = sdpa.mask_rows(pad, shape)
        assert row.shape == (L, S) and period == L and row.flags.c_contiguous
        np.testing.assert_array_equal(row, np.broadcast_to(pad, (L, S)))
    full, period = sdpa.mask_rows(MASKS["per batch"], shape)
    assert full.shape == shape and period == B * H * L
    np.testing.assert_array_equal(full, np.broadcast_to(MASKS["per batch"], shape))


def test_nan_score_poisons_only_its_row(on_host):
    q = np.random.default_rng(2).standard_normal((1, 3, 2))
    k = np.random.default_rng(3).standard_normal((1, 40, 2))
    q[0, 1, 0] = np.nan
    _, weights = sdpa.attention(_dev(q), _dev(k), _dev(k), None, 1.0)
    w = np.asarray(weights)
    assert np.isnan(w[0, 1]).all() and np.isfinite(w[0, [0, 2]]).all()
