"""Sequence layers against NumPy float64 references written from their equations (no
PyTorch needed), and their gradients against central finite differences."""

import re

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.helpers import finite_difference
from tests.nn.torch_compare import devices

rng = np.random.default_rng(11)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def ref_lstm(x, w):
    """One layer, one direction, x (L, N, in), zero initial state; gates i, f, g, o."""
    hidden = w["weight_hh_l0"].shape[1]
    h = c = np.zeros((x.shape[1], hidden))
    out = []
    for x_t in x:
        gates = x_t @ w["weight_ih_l0"].T + w["bias_ih_l0"] + h @ w["weight_hh_l0"].T \
            + w["bias_hh_l0"]
        i, f, g, o = np.split(gates, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out), h, c


def ref_gru(x, w):
    hidden = w["weight_hh_l0"].shape[1]
    h = np.zeros((x.shape[1], hidden))
    out = []
    for x_t in x:
        i_r, i_z, i_n = np.split(x_t @ w["weight_ih_l0"].T + w["bias_ih_l0"], 3, axis=1)
        h_r, h_z, h_n = np.split(h @ w["weight_hh_l0"].T + w["bias_hh_l0"], 3, axis=1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out), h


def ref_attention(q, k, v, allowed=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return weights @ v, weights


def ref_mha(q, k, v, w, heads):
    wq, wk, wv = np.split(w["in_proj_weight"], 3)
    bq, bk, bv = np.split(w["in_proj_bias"], 3)

    def split(t):  # (L, N, E) -> (N, heads, L, d)
        length, batch, e = t.shape
        return t.reshape(length, batch, heads, e // heads).transpose(1, 2, 0, 3)

    out, weights = ref_attention(split(q @ wq.T + bq), split(k @ wk.T + bk), split(v @ wv.T + bv))
    length, batch, e = q.shape
    out = out.transpose(2, 0, 1, 3).reshape(length, batch, e)
    return out @ w["out_proj.weight"].T + w["out_proj.bias"], weights.mean(1)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_and_gru_match_their_equations(device, dtype):
    x = rng.standard_normal((6, 3, 2))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    lstm = nn.LSTM(2, 4, dtype=dtype, device=device)
    out, (h, c) = lstm(fnn.tensor(x, dtype=dtype, device=device))
    want = ref_lstm(x, lstm.state_dict())
    for got, ref in zip((out, h, c), want):
        np.testing.assert_allclose(got.numpy().reshape(ref.shape), ref, **tol)
    gru = nn.GRU(2, 4, dtype=dtype, device=device)
    out, h = gru(fnn.tensor(x, dtype=dtype, device=device))
    want = ref_gru(x, gru.state_dict())
    for got, ref in zip((out, h), want):
        np.testing.assert_allclose(got.numpy().reshape(ref.shape), ref, **tol)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_gradients_match_finite_differences(kind):
    layer = getattr(nn, kind)(2, 3, dtype=fnn.float64)
    weights = layer.state_dict()
    ref = ref_lstm if kind == "LSTM" else ref_gru
    x = rng.standard_normal((4, 2, 2))
    names = ["weight_ih_l0", "weight_hh_l0", "bias_hh_l0"]

    def fn(x_, *params):
        return ref(x_, {**weights, **dict(zip(names, params))})[0]

    xt = fnn.tensor(x, requires_grad=True)
    out, _ = layer(xt)
    for index, name in enumerate(["x"] + names):
        fd, w_out = finite_difference(fn, [x] + [weights[n] for n in names], index)
        if index == 0:
            (out * fnn.tensor(w_out)).sum().backward()
            np.testing.assert_allclose(xt.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
        else:
            np.testing.assert_allclose(dict(layer.named_parameters())[name].grad.numpy(), fd,
                                       rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("device", devices())
def test_multihead_attention_matches_its_equations(device):
    mha = nn.MultiheadAttention(6, 3, dtype=fnn.float64, device=device)
    state = mha.state_dict()
    state["in_proj_bias"] = rng.standard_normal(18)
    state["out_proj.bias"] = rng.standard_normal(6)
    mha.load_state_dict(state)
    q, kv = rng.standard_normal((4, 2, 6)), rng.standard_normal((5, 2, 6))
    out, weights = mha(*(fnn.tensor(a, device=device) for a in (q, kv, kv)))
    want_out, want_weights = ref_mha(q, kv, kv, state, 3)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), want_weights, rtol=1e-10, atol=1e-12)


def test_attention_masks_mean_what_pytorch_means():
    q, k, v = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    allowed = rng.uniform(size=(4, 4)) > 0.4
    np.fill_diagonal(allowed, True)
    got = F.scaled_dot_product_attention(fnn.tensor(q), fnn.tensor(k), fnn.tensor(v),
                                         attn_mask=fnn.tensor(allowed))
    np.testing.assert_allclose(got.numpy(), ref_attention(q, k, v, allowed)[0], rtol=1e-6)
    causal = F.scaled_dot_product_attention(fnn.tensor(q), fnn.tensor(k), fnn.tensor(v),
                                            is_causal=True)
    np.testing.assert_allclose(causal.numpy(), ref_attention(q, k, v, np.tri(4, dtype=bool))[0],
                               rtol=1e-6)
    # MultiheadAttention: True is masked OUT
    mha = nn.MultiheadAttention(3, 1, dtype=fnn.float64)
    x = fnn.tensor(q.transpose(1, 0, 2))
    a = mha(x, x, x, attn_mask=fnn.tensor(~allowed))[1]
    assert np.all(a.numpy()[:, ~allowed] == 0) and np.all(a.numpy()[:, allowed] > 0)


def test_sdpa_gradient_matches_finite_differences():
    q, k, v = (rng.standard_normal((2, 3, 2)) for _ in range(3))
    tensors = [fnn.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*tensors)
    for index in range(3):
        fd, w_out = finite_difference(lambda *a: ref_attention(*a)[0], [q, k, v], index)
        if index == 0:
            (out * fnn.tensor(w_out)).sum().backward()
        np.testing.assert_allclose(tensors[index].grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_embedding_picks_rows_and_padding_row_gets_no_gradient():
    emb = nn.Embedding(5, 3, padding_idx=0, dtype=fnn.float64)
    idx = np.array([[0, 2, 2], [4, 0, 1]])
    out = emb(fnn.tensor(idx))
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[idx])
    g = rng.standard_normal((2, 3, 3))
    out.backward(fnn.tensor(g))
    want = np.zeros((5, 3))
    np.add.at(want, idx, g)
    want[0] = 0.0
    np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-12)
    with pytest.raises(TypeError, match="indices must be an int64 or int32"):
        emb(fnn.tensor([0.0, 1.0], dtype=fnn.float64))
    with pytest.raises(ValueError, match="padding_idx must be in"):
        nn.Embedding(5, 3, padding_idx=5)


def test_bad_arguments_name_the_layer_and_the_fix():
    with pytest.raises(ValueError, match="embed_dim 5 must be divisible by num_heads 2"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match=r"LSTM: input must be \(L, N, in\)"):
        nn.LSTM(3, 4)(fnn.randn((2, 2, 5)))
    with pytest.raises(ValueError, match=r"h_0 must have shape \(1, 2, 4\)"):
        nn.GRU(3, 4)(fnn.randn((2, 2, 3)), fnn.randn((2, 2, 4)))
    with pytest.raises(TypeError, match=r"tuple \(h_0, c_0\)"):
        nn.LSTM(3, 4)(fnn.randn((2, 2, 3)), fnn.randn((1, 2, 4)))
    with pytest.raises(ValueError, match="activation must be 'relu', 'gelu'"):
        nn.TransformerEncoderLayer(4, 2, activation="swish")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_refuses_a_mixed_dtype_state_and_an_empty_sequence(kind):
    # issue 25: a float64 h_0 with float32 input computed silently in float64, and a
    # zero-length sequence said "stack: expected a non-empty sequence" (torch raises both)
    layer = getattr(nn, kind)(3, 4)
    state = fnn.zeros((1, 2, 4), dtype=fnn.float64)
    with pytest.raises(TypeError, match=f"{kind}: h_0 is float64 but the input is float32; "
                                        r"give them one dtype, e.g. h_0.to\(x.dtype\)"):
        layer(fnn.zeros((5, 2, 3)), (state, state) if kind == "LSTM" else state)
    for shape, batch_first in (((0, 2, 3), False), ((0, 3), False), ((2, 0, 3), True)):
        layer.batch_first = batch_first
        with pytest.raises(ValueError, match=rf"{kind}: the input of shape "
                                             rf"{re.escape(str(shape))} has a sequence length "
                                             "of 0"):
            layer(fnn.zeros(shape))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        getattr(torch.nn, kind)(3, 4)(torch.zeros((0, 2, 3)))
    with pytest.raises(RuntimeError):  # (its message varies with the kernel it reaches)
        state = torch.zeros((1, 2, 4), dtype=torch.float64)
        getattr(torch.nn, kind)(3, 4)(torch.zeros((5, 2, 3)),
                                     (state, state) if kind == "LSTM" else state)


def test_attention_refuses_integer_masks():
    # issue 25: an int64 attn_mask was added to the scores as a float mask (torch raises)
    layer, x = nn.MultiheadAttention(4, 2), fnn.zeros((3, 1, 4))
    for name, mask in (("attn_mask", fnn.zeros((3, 3), dtype=fnn.int64)),
                       ("key_padding_mask", fnn.zeros((1, 3), dtype=fnn.int64))):
        with pytest.raises(TypeError, match=f"MultiheadAttention: {name} must be bool .* "
                                            rf"got int64; convert with {name}.bool\(\)"):
            layer(x, x, x, **{name: mask})
    with pytest.raises(TypeError, match="attn_mask must be bool or floating"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=fnn.zeros((3, 3), dtype=fnn.int64))
    torch = pytest.importorskip("torch")
    tx = torch.zeros((3, 1, 4))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        torch.nn.MultiheadAttention(4, 2)(tx, tx, tx, attn_mask=torch.zeros((3, 3)).long())
