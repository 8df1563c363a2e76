"""The CUDA backend's attention hooks with NumPy standing in for cupy (the softmax on its
cupy path), against the NumPy backend's blocked hooks: unmasked and causal, strided heads,
a broadcast gradient."""

from __future__ import annotations

import types

import numpy as np
import pytest
from fastnn_cpu import sdpa as cpu_sdpa
from fastnn_cuda import fused, indexing, kernels, primitives, sdpa

from tests.backends.cuda.cupy_standin import CupyStandIn


@pytest.fixture(autouse=True)
def numpy_as_cupy(monkeypatch):
    for module in (fused, sdpa):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    monkeypatch.setattr(kernels, "has_kernel", lambda dtype: False)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (7, 3), (3, 6, 2)])
@pytest.mark.parametrize("strided", [False, True])
def test_attention_hooks_match_the_numpy_backend(causal, shape, strided):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    if strided:  # the same values through a transposed layout
        q, k, v = (np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2) for a in (q, k, v))
    length = shape[-2]
    mask = np.tril(np.ones((length, length), bool)) if causal else None
    grad = np.broadcast_to(rng.standard_normal(shape[-1:]), shape)
    out, weights = sdpa.attention(q, k, v, mask, 0.3)
    want_out, want_weights = cpu_sdpa.attention(q, k, v, mask, 0.3)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12, atol=1e-13)
    got = sdpa.attention_backward(q, k, v, weights, grad, 0.3)
    want = cpu_sdpa.attention_backward(q, k, v, want_weights, grad, 0.3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_attention_hooks_pass_the_conformance_check(monkeypatch, dtype):
    """attention_packed and its backward (the composites on cuda's own slice, reshape,
    transpose, cat and attention hooks) through the suite's check: a contiguous qkv and
    the layer's transposed view with its order."""
    from fastnn.conformance import cases_attention

    for module in (indexing, primitives):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    ops = types.SimpleNamespace(
        from_numpy=lambda array, index: np.array(array, copy=True), to_numpy=np.array,
        transpose=primitives.transpose, reshape=primitives.reshape, slice=indexing.slice,
        cat=indexing.cat, attention=sdpa.attention, attention_backward=sdpa.attention_backward,
        attention_packed=sdpa.attention_packed,
        attention_packed_backward=sdpa.attention_packed_backward)
    cases_attention._check_packed(types.SimpleNamespace(ops=ops, index=0), dtype,
                                  np.random.default_rng(0))
