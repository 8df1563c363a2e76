"""fastnn.nn.attention.flex_attention (PyTorch's eager flex_attention): outputs and
log-sum-exps against a NumPy float64 reference (score mods, masks, rows left without a key,
grouped-query heads), gradients by finite differences, and PyTorch's forward where it is
installed (PyTorch has no flex_attention backward on the CPU)."""

import math
import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn.nn.attention import flex_attention as flex

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((2, 4, 5, 8))
K = RNG.standard_normal((2, 2, 7, 8))
V = RNG.standard_normal((2, 2, 7, 6))
BIAS = RNG.standard_normal((4, 5, 7))


def _masks(lib):
    return {
        "none": None,
        "causal": lambda b, h, q, k: q >= k,
        "window and causal": flex.and_masks(lambda b, h, q, k: q >= k,
                                            lambda b, h, q, k: (q - k).abs() <= 2),
        "first row empty": lambda b, h, q, k: (q != 0) & (k <= q + 1),
        "by batch": lambda b, h, q, k: (k < 3 + 2 * b) | (h == 1),
    }


def _scores(lib, bias):
    return {
        "none": None,
        "alibi": lambda s, b, h, q, k: s + (h + 1) * 0.1 * (k - q),
        "table": lambda s, b, h, q, k: s + bias[h, q, k],
        "softcap": lambda s, b, h, q, k: 30 * lib.tanh(s / 30),
    }


def _numpy(mask_name, score_name):
    """(out, lse) by hand in float64."""
    k, v = np.repeat(K, 2, axis=1), np.repeat(V, 2, axis=1)
    s = Q @ k.transpose(0, 1, 3, 2) / math.sqrt(8)
    b, h, q, kv = np.ogrid[:2, :4, :5, :7]
    if score_name == "alibi":  # (an int tensor times 0.1 is float32, as PyTorch's)
        s = s + ((h + 1).astype(np.float32) * np.float32(0.1)) * (kv - q).astype(np.float32)
    elif score_name == "table":
        s = s + BIAS[h, q, kv]
    elif score_name == "softcap":
        s = 30 * np.tanh(s / 30)
    keep = {"none": np.ones(s.shape, bool), "causal": q >= kv,
            "window and causal": (q >= kv) & (np.abs(q - kv) <= 2),
            "first row empty": (q != 0) & (kv <= q + 1),
            "by batch": (kv < 3 + 2 * b) | (h == 1)}[mask_name]
    s = np.where(np.broadcast_to(keep, s.shape), s, -np.inf)
    top = s.max(-1, keepdims=True)
    alive = np.isfinite(top)
    e = np.where(alive, np.exp(s - np.where(alive, top, 0)), 0.0)
    total = e.sum(-1, keepdims=True)
    out = np.where(alive, e / np.where(alive, total, 1), 0) @ v
    lse = np.where(alive, np.log(np.where(alive, total, 1)) + np.where(alive, top, 0), -np.inf)
    return out, lse[..., 0]


@pytest.mark.parametrize("mask_name", list(_masks(None)))
@pytest.mark.parametrize("score_name", list(_scores(fnn, None)))
def test_outputs_and_lse_equal_a_float64_reference(mask_name, score_name):
    mask_mod = _masks(fnn)[mask_name]
    score_mod = _scores(fnn, fnn.tensor(BIAS))[score_name]
    batch = 2 if mask_name == "by batch" else None
    heads = 4 if mask_name == "by batch" else None
    block = None if mask_mod is None else flex.create_block_mask(mask_mod, batch, heads, 5, 7)
    out, lse = flex.flex_attention(fnn.tensor(Q), fnn.tensor(K), fnn.tensor(V),
                                   score_mod=score_mod, block_mask=block, enable_gqa=True,
                                   return_lse=True)
    want_out, want_lse = _numpy(mask_name, score_name)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.isneginf(lse.numpy()), np.isneginf(want_lse))
    finite = np.isfinite(want_lse)
    np.testing.assert_allclose(lse.numpy()[finite], want_lse[finite], rtol=1e-12)
    if mask_name == "first row empty":  # (zeros where scaled_dot_product_attention: NaN)
        assert not out.numpy()[:, :, 0].any()


def test_gradients_through_the_score_mod_and_the_inputs_by_finite_differences():
    q, k, v = (fnn.tensor(a, requires_grad=True)
               for a in (Q[:1, :2, :3, :4], K[:1, :2, :4, :4], V[:1, :2, :4, :3]))
    bias = fnn.tensor(BIAS[:2, :3, :4], requires_grad=True)
    block = flex.create_block_mask(lambda b, h, qi, ki: ki <= qi + 1, None, None, 3, 4)

    def fn(q, k, v, bias):
        return flex.flex_attention(q, k, v, block_mask=block,
                                   score_mod=lambda s, b, h, qi, ki: s + bias[h, qi, ki])

    assert fnn.autograd.gradcheck(fn, (q, k, v, bias))


def test_bad_arguments_are_named():
    q = fnn.tensor(Q)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        flex.flex_attention(q, fnn.tensor(K), fnn.tensor(V))
    with pytest.raises(ValueError, match="4-d"):
        flex.flex_attention(q[0], fnn.tensor(K), fnn.tensor(V))
    block = flex.create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, 6, 7)
    with pytest.raises(ValueError, match="block_mask is for"):
        flex.flex_attention(q, fnn.tensor(K), fnn.tensor(V), block_mask=block, enable_gqa=True)
    with pytest.raises(RuntimeError, match="bool tensor"):
        flex.create_block_mask(lambda b, h, qi, ki: qi - ki, None, None, 5, 7)


# each mask and each score_mod once (PyTorch's eager flex_attention takes ~0.6 s a call)
PAIRS = [("none", "none"), ("causal", "alibi"), ("window and causal", "table"),
         ("first row empty", "softcap"), ("by batch", "alibi")]


def test_as_pytorchs_forward():
    torch = pytest.importorskip("torch")
    theirs_flex = pytest.importorskip("torch.nn.attention.flex_attention")
    for mask_name, score_name in PAIRS:
        results = []
        for lib, module in ((torch, theirs_flex), (fnn, flex)):
            mask_mod = _masks(lib)[mask_name]
            score_mod = _scores(lib, lib.tensor(BIAS))[score_name]
            block = (None if mask_mod is None else
                     module.create_block_mask(mask_mod, 2, 4, 5, 7, device="cpu"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (PyTorch's: "without torch.compile")
                out, aux = module.flex_attention(
                    lib.tensor(Q), lib.tensor(K), lib.tensor(V), score_mod=score_mod,
                    block_mask=block, enable_gqa=True,
                    return_aux=module.AuxRequest(lse=True))
            results.append((out.numpy(), aux.lse.numpy()))
        (theirs, their_lse), (ours, our_lse) = results
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(our_lse, their_lse, rtol=1e-10)
