"""The cpu backend's attention (fastnn_cpu.sdpa) with its softmax down the score columns
in C (native_act.c: float32, no mask or one mask for every matrix) and with NumPy's
passes: the forward and backward against a float64 reference written out directly,
masks of each kind, a query whose keys are all masked (NaN, as the composite's), a NaN
score, and head views of a packed projection as nanoGPT's."""

import numpy as np
import pytest
from fastnn_cpu import native, sdpa

from tests.backends.cpu.native_switch import c_or_not, spy


@pytest.fixture(params=["C", "NumPy"])
def loops(request, monkeypatch):
    return c_or_not(request, monkeypatch, "_ACT", native.act_library)


def _reference(q, k, v, mask, scale, grad):
    """(out, weights, grad_q, grad_k, grad_v) in float64, softmax over the keys."""
    q, k, v, grad = (a.astype(np.float64) for a in (q, k, v, grad))
    s = q @ k.swapaxes(-1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
    out = w @ v
    dw = grad @ v.swapaxes(-1, -2)
    ds = w * (dw - (dw * w).sum(-1, keepdims=True))
    return out, w, ds @ k * scale, ds.swapaxes(-1, -2) @ q * scale, w.swapaxes(-1, -2) @ grad


def _heads(rng, batch, heads, length, width, dtype=np.float32):
    """q, k, v as head views (batch, heads, L, E) of one packed (batch, L, 3 * heads * E)
    projection, as a fused q/k/v layer gives them."""
    packed = rng.standard_normal((batch, length, 3 * heads * width)).astype(dtype)
    parts = np.split(packed, 3, axis=-1)
    return [p.reshape(batch, length, heads, width).transpose(0, 2, 1, 3) for p in parts]


def _masks(length):
    causal = np.tril(np.ones((length, length), bool))
    keys = np.ones(length, bool)
    keys[-3:] = False
    per_batch = np.random.default_rng(1).random((2, 1, length, length)) < 0.7
    per_batch[..., 0] = True  # (every query keeps a key: no NaN rows here)
    return {"none": None, "causal": causal, "keys": keys, "per batch": per_batch}


@pytest.mark.parametrize("kind", ["none", "causal", "keys", "per batch"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_and_its_backward_match_float64(kind, dtype, loops):
    rng = np.random.default_rng(0)
    q, k, v = _heads(rng, 2, 4, 64, 16, dtype)
    mask = _masks(64)[kind]
    grad = rng.standard_normal(q.shape).astype(dtype)
    out, weights = sdpa.attention(q, k, v, mask, 0.25)
    grads = sdpa.attention_backward(q, k, v, weights, grad, 0.25)
    want = _reference(q, k, v, mask, 0.25, grad)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for got, expected in zip((out, weights, *grads), want):
        assert got.dtype == dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, **tol)


def test_a_query_with_every_key_masked_and_a_nan_score_give_nan_as_numpy(loops):
    """A wholly masked query's weights are NaN (-inf - -inf), as are those of a query
    whose scores hold a NaN; the other queries are untouched by either."""
    rng = np.random.default_rng(2)
    q, k, v = _heads(rng, 2, 4, 64, 16)
    mask = np.tril(np.ones((64, 64), bool))
    mask[5] = False
    q[0, 1, 9, 0] = np.nan
    out, weights = sdpa.attention(q, k, v, mask, 0.25)
    assert np.isnan(weights[:, :, 5]).all() and np.isnan(out[:, :, 5]).all()
    assert np.isnan(weights[0, 1, 9]).all()
    fine = np.ones(weights.shape[:3], bool)
    fine[:, :, 5] = False
    fine[0, 1, 9] = False
    want = _reference(q, k, v, mask, 0.25, np.zeros_like(q))[1]
    np.testing.assert_allclose(weights[fine], want[fine], rtol=2e-5, atol=2e-6)


def test_the_c_softmax_runs_on_nanogpts_float32_heads(monkeypatch):
    calls = spy(monkeypatch, "_ACT", native.act_library)
    rng = np.random.default_rng(3)
    q, k, v = _heads(rng, 16, 4, 64, 16)
    out, weights = sdpa.attention(q, k, v, np.tril(np.ones((64, 64), bool)), 0.25)
    sdpa.attention_backward(q, k, v, weights, out, 0.25)
    assert set(calls) == {"softmax_cols_f32", "softmax_cols_backward_f32"}
