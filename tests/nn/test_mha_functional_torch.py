"""F.multi_head_attention_forward: against a NumPy float64 computation of its definition,
against PyTorch's (outputs, weights and the gradients of every tensor argument) over its
options, against fastnn's own nn.MultiheadAttention, finite differences, and refusals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]
E, H, L, S, N = 8, 2, 3, 4, 2
GRADS = ("query", "key", "value", "in_proj_weight", "in_proj_bias", "bias_k", "bias_v",
         "out_proj_weight", "out_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight",
         "static_k", "static_v")


def _arguments(rng, batched=True, separate=False, bias=True, bias_kv=False, static=False,
               padding=None, mask=None, self_attention=False):
    """Host arrays of the tensor arguments (None: not given)."""
    lead = (lambda length: (length, N)) if batched else (lambda length: (length,))
    source = L if self_attention else S
    rows = N if batched else 1
    a = {"query": rng.normal(size=lead(L) + (E,)), "key": rng.normal(size=lead(S) + (E,)),
         "value": rng.normal(size=lead(S) + (E,)),
         "out_proj_weight": rng.normal(size=(E, E)) * 0.3}
    if self_attention:
        a["key"] = a["value"] = a["query"]
    if separate:
        for name in ("q", "k", "v"):
            a[f"{name}_proj_weight"] = rng.normal(size=(E, E)) * 0.3
    else:
        a["in_proj_weight"] = rng.normal(size=(3 * E, E)) * 0.3
    if bias:
        a["in_proj_bias"], a["out_proj_bias"] = rng.normal(size=3 * E), rng.normal(size=E)
    if bias_kv:
        a["bias_k"], a["bias_v"] = rng.normal(size=(1, 1, E)), rng.normal(size=(1, 1, E))
    if static:
        a["static_k"] = rng.normal(size=(rows * H, source, E // H))
        a["static_v"] = rng.normal(size=(rows * H, source, E // H))
    if padding is not None:
        masked = rng.random((N, source) if batched else (source,)) < 0.4
        masked[..., 0] = False  # (every row keeps a key)
        a["key_padding_mask"] = masked if padding == "bool" else np.where(
            masked, -np.inf, rng.normal(size=masked.shape))
    if mask is not None:
        shape = (rows * H, L, source) if mask == "3d" else (L, source)
        masked = rng.random(shape) < 0.3
        masked[..., 0] = False
        a["attn_mask"] = masked if mask == "bool" else np.where(masked, -1e9, 0.0) \
            if mask == "3d" else np.where(masked, -np.inf, rng.normal(size=shape))
    if mask == "causal":
        a["attn_mask"] = np.triu(np.ones((L, source), bool), 1)
    return a


def _call(lib, functional, arrays, options, device="cpu", dtype="float64"):
    """(output, weights, {name: grad}) of lib's function on arrays, with a fixed loss."""
    made = {}
    for name, value in arrays.items():
        floating = value.dtype != bool
        value = value.astype(dtype) if floating else value
        grad = name in GRADS
        made[name] = (lib.tensor(value, requires_grad=grad) if lib.__name__ == "torch"
                      else lib.tensor(value, requires_grad=grad, device=device))
    if arrays["key"] is arrays["query"]:
        made["key"] = made["value"] = made["query"]
    kwargs = {**{k: v for k, v in made.items() if k not in ("query", "key", "value")},
              **options}
    kwargs.setdefault("in_proj_weight", None)
    kwargs.setdefault("in_proj_bias", None)
    out, weights = functional.multi_head_attention_forward(
        made["query"], made["key"], made["value"], E, H, kwargs.pop("in_proj_weight"),
        kwargs.pop("in_proj_bias"), kwargs.pop("bias_k", None), kwargs.pop("bias_v", None),
        kwargs.pop("add_zero_attn", False), kwargs.pop("dropout_p", 0.0),
        kwargs.pop("out_proj_weight"), kwargs.pop("out_proj_bias", None), **kwargs)
    rng = np.random.default_rng(9)
    like = (lambda a: lib.tensor(a.astype(dtype))) if lib.__name__ == "torch" else \
        (lambda a: lib.tensor(a.astype(dtype), device=device))
    loss = (out * like(rng.normal(size=tuple(out.shape)))).sum()
    if weights is not None:
        loss = loss + (weights * like(rng.normal(size=tuple(weights.shape)))).sum()
    loss.backward()
    grads = {k: t.grad for k, t in made.items() if k in GRADS and t.grad is not None}
    return out, weights, grads


CONFIGS = {
    "packed, masks": (dict(padding="bool", mask="float"), {}),
    "unbatched, per head": (dict(batched=False, padding="bool", mask="3d"),
                            dict(average_attn_weights=False)),
    "separate, bias_kv, zero attn": (dict(separate=True, bias_kv=True, mask="bool"),
                                     dict(use_separate_proj_weight=True, add_zero_attn=True)),
    "self, no weights, causal hint": (dict(self_attention=True, mask="causal", bias=False),
                                      dict(need_weights=False, is_causal=True)),
    "static k/v, float padding": (dict(static=True, padding="float"),
                                  dict(need_weights=False)),
    "causal hint with padding": (dict(mask="causal", padding="bool"),
                                 dict(need_weights=False, is_causal=True)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_matches_torch(config, device):
    torch = pytest.importorskip("torch")
    build, options = CONFIGS[config]
    arrays = _arguments(np.random.default_rng(1), **build)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's notice on mixed mask types)
        ref, ref_w, ref_g = _call(torch, torch.nn.functional, arrays, options)
        out, weights, grads = _call(fnn, F, arrays, options, device)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert (weights is None) == (ref_w is None)
    if weights is not None:
        assert weights.shape == tuple(ref_w.shape)
        np.testing.assert_allclose(weights.numpy(), ref_w.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    assert sorted(grads) == sorted(ref_g)
    for name, grad in ref_g.items():
        np.testing.assert_allclose(grads[name].numpy(), grad.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=name)


def test_float32_matches_torch():
    torch = pytest.importorskip("torch")
    arrays = _arguments(np.random.default_rng(2), padding="bool", mask="bool")
    ref, ref_w, ref_g = _call(torch, torch.nn.functional, arrays, {}, dtype="float32")
    out, weights, grads = _call(fnn, F, arrays, {}, dtype="float32")
    assert out.dtype == fnn.float32
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(weights.numpy(), ref_w.detach().numpy(), rtol=2e-5, atol=2e-6)
    for name, grad in ref_g.items():
        np.testing.assert_allclose(grads[name].numpy(), grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def test_matches_the_definition_in_numpy():
    a = _arguments(np.random.default_rng(3), padding="bool", mask="float")
    w_q, w_k, w_v = np.split(a["in_proj_weight"], 3)
    b_q, b_k, b_v = np.split(a["in_proj_bias"], 3)
    d = E // H
    heads = lambda x, w, b: (x @ w.T + b).reshape(x.shape[0], N, H, d).transpose(1, 2, 0, 3)  # noqa: E731
    q, k, v = heads(a["query"], w_q, b_q), heads(a["key"], w_k, b_k), heads(a["value"], w_v, b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + a["attn_mask"]
    scores = np.where(a["key_padding_mask"][:, None, None, :], -np.inf, scores)
    weights = _softmax(scores)  # (N, H, L, S)
    joined = (weights @ v).transpose(2, 0, 1, 3).reshape(L, N, E)
    expected = joined @ a["out_proj_weight"].T + a["out_proj_bias"]
    t = {k: fnn.tensor(v) for k, v in a.items()}
    out, mean = F.multi_head_attention_forward(
        t["query"], t["key"], t["value"], E, H, t["in_proj_weight"], t["in_proj_bias"], None,
        None, False, 0.0, t["out_proj_weight"], t["out_proj_bias"],
        key_padding_mask=t["key_padding_mask"], attn_mask=t["attn_mask"])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), weights.mean(axis=1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mean.numpy().sum(axis=-1), 1.0, rtol=1e-12)


def test_gradient_matches_central_differences():
    a = _arguments(np.random.default_rng(4), bias_kv=True, padding="bool")
    t = {k: fnn.tensor(v) for k, v in a.items()}
    g = np.random.default_rng(5).normal(size=(L, N, E))

    def loss(query, in_proj_weight):
        out, _ = F.multi_head_attention_forward(
            query, t["key"], t["value"], E, H, in_proj_weight, t["in_proj_bias"], t["bias_k"],
            t["bias_v"], True, 0.0, t["out_proj_weight"], t["out_proj_bias"],
            key_padding_mask=t["key_padding_mask"])
        return (out * fnn.tensor(g)).sum()

    query = fnn.tensor(a["query"], requires_grad=True)
    weight = fnn.tensor(a["in_proj_weight"], requires_grad=True)
    loss(query, weight).backward()
    eps = 1e-6
    for name, host, grad in (("query", a["query"], query.grad),
                             ("in_proj_weight", a["in_proj_weight"], weight.grad)):
        numeric = np.zeros_like(host)
        for i in list(np.ndindex(*host.shape))[::5]:  # every fifth entry: quick, still broad
            up, down = host.copy(), host.copy()
            up[i] += eps
            down[i] -= eps
            args = [fnn.tensor(a["query"]), fnn.tensor(a["in_proj_weight"])]
            which = 0 if name == "query" else 1
            args[which] = fnn.tensor(up)
            high = loss(*args).item()
            args[which] = fnn.tensor(down)
            numeric[i] = (high - loss(*args).item()) / (2 * eps)
            np.testing.assert_allclose(grad.numpy()[i], numeric[i], rtol=1e-6, atol=1e-8,
                                       err_msg=f"{name}{i}")


def test_agrees_with_nn_multihead_attention():
    fnn.manual_seed(0)
    layer = nn.MultiheadAttention(E, H, add_bias_kv=True, kdim=6, vdim=5, dtype=fnn.float64)
    rng = np.random.default_rng(6)
    q = fnn.tensor(rng.normal(size=(L, N, E)))
    k, v = fnn.tensor(rng.normal(size=(S, N, 6))), fnn.tensor(rng.normal(size=(S, N, 5)))
    ref, ref_w = layer(q, k, v)
    out, weights = F.multi_head_attention_forward(
        q, k, v, E, H, None, layer.in_proj_bias, layer.bias_k, layer.bias_v, False, 0.0,
        layer.out_proj.weight, layer.out_proj.bias, use_separate_proj_weight=True,
        q_proj_weight=layer.q_proj_weight, k_proj_weight=layer.k_proj_weight,
        v_proj_weight=layer.v_proj_weight)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(weights.numpy(), ref_w.numpy(), rtol=1e-12, atol=1e-14)


def test_dropout_and_fully_masked_rows():
    a = _arguments(np.random.default_rng(7))
    t = {k: fnn.tensor(v) for k, v in a.items()}

    def call(p, training, need_weights=True, padding=None):
        return F.multi_head_attention_forward(
            t["query"], t["key"], t["value"], E, H, t["in_proj_weight"], t["in_proj_bias"], None,
            None, False, p, t["out_proj_weight"], t["out_proj_bias"], training=training,
            need_weights=need_weights, average_attn_weights=False, key_padding_mask=padding)

    plain, plain_w = call(0.0, True)
    evaluated, evaluated_w = call(0.5, False)  # training=False: no dropout
    np.testing.assert_array_equal(evaluated.numpy(), plain.numpy())
    _, dropped_w = call(0.5, True)
    kept = dropped_w.numpy() != 0
    assert 0 < kept.mean() < 1  # each weight dropped, or kept and scaled by 1 / (1 - p)
    np.testing.assert_allclose(dropped_w.numpy()[kept], 2 * plain_w.numpy()[kept], rtol=1e-12)
    padding = np.zeros((N, S), bool)
    padding[1] = True  # every key of the second sequence masked out
    out, weights = call(0.0, False, True, fnn.tensor(padding))
    assert np.isnan(out.numpy()[:, 1]).all() and np.isnan(weights.numpy()[1]).all()
    assert not np.isnan(out.numpy()[:, 0]).any()
    out, _ = call(0.0, False, False, fnn.tensor(padding))  # as PyTorch's SDPA: no NaN
    assert not np.isnan(out.numpy()).any()


def _bad(**changes):
    a = _arguments(np.random.default_rng(8))
    t = {k: fnn.tensor(v) for k, v in a.items()}
    args = dict(query=t["query"], key=t["key"], value=t["value"], embed_dim_to_check=E,
                num_heads=H, in_proj_weight=t["in_proj_weight"], in_proj_bias=t["in_proj_bias"],
                bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
                out_proj_weight=t["out_proj_weight"], out_proj_bias=t["out_proj_bias"])
    args.update(changes)
    return lambda: F.multi_head_attention_forward(**args)


BAD = {
    "embed dim": (_bad(embed_dim_to_check=6), ValueError, "expecting embedding dimension of 6"),
    "heads": (_bad(num_heads=3), ValueError, "not divisible by num_heads 3"),
    "4-D query": (_bad(query=fnn.zeros(1, L, N, E)), ValueError, "received 4-D query"),
    "2-D key, 3-D query": (_bad(key=fnn.zeros(S, E)), ValueError, "expected `key` and `value`"),
    "key vs value": (_bad(value=fnn.zeros(S + 1, N, E)), ValueError, "does not match value"),
    "no in_proj_weight": (_bad(in_proj_weight=None), ValueError, "in_proj_weight is None"),
    "separate, none": (_bad(use_separate_proj_weight=True), ValueError, "q_proj_weight is None"),
    "packed shape": (_bad(in_proj_weight=fnn.zeros(E, E)), ValueError, "in_proj_weight of shape"),
    "mask shape": (_bad(attn_mask=fnn.zeros(L, S + 1)), ValueError, "2D attn_mask"),
    "3-D mask shape": (_bad(attn_mask=fnn.zeros(H, L, S)), ValueError, "3D attn_mask"),
    "int mask": (_bad(attn_mask=fnn.zeros(L, S, dtype=fnn.int64)), TypeError,
                 "only bool and floating"),
    "padding shape": (_bad(key_padding_mask=fnn.zeros(N, S + 1, dtype=fnn.bool)), ValueError,
                      "key_padding_mask shape"),
    "causal alone": (_bad(is_causal=True), ValueError, "Need attn_mask"),
    "bias_k alone": (_bad(bias_k=fnn.zeros(1, 1, E)), ValueError, "together"),
    "static with bias": (_bad(bias_k=fnn.zeros(1, 1, E), bias_v=fnn.zeros(1, 1, E),
                              static_k=fnn.zeros(N * H, S, E // H)), ValueError, "static"),
    "static shape": (_bad(static_k=fnn.zeros(N, S, E // H)), ValueError, "static_k of shape"),
    "not a tensor": (_bad(query=[[0.0]]), TypeError, "query must be a Tensor"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_arguments_raise(name):
    call, error, match = BAD[name]
    with pytest.raises(error, match=match):
        call()
