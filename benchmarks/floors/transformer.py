"""Attention floors: a 2-layer post-norm TransformerEncoder (PyTorch's layer, ReLU, no
dropout) and a nanoGPT-style pre-norm block with causal attention and GELU."""

import numpy as np

from floors.layers import (
    attention_b,
    attention_f,
    cross_entropy,
    gelu_b,
    gelu_f,
    heads,
    layernorm_b,
    layernorm_f,
    linear_b,
    linear_f,
    merge,
    relu_b,
    relu_f,
    sgd,
)


def _self_attention_f(x, w_qkv, b_qkv, w_out, b_out, n_heads, causal):
    qkv, c_in = linear_f(x, w_qkv, b_qkv)
    d = x.shape[-1]
    q, k, v = (heads(qkv[..., i * d:(i + 1) * d], n_heads) for i in range(3))
    o, c_att = attention_f(q, k, v, causal)
    out, c_out = linear_f(merge(o), w_out, b_out)
    return out, (c_in, c_att, c_out, w_qkv, w_out, n_heads)


def _self_attention_b(g, cache):
    c_in, c_att, c_out, w_qkv, w_out, n_heads = cache
    g, dw_out, db_out = linear_b(g, c_out, w_out)
    b, t, d = g.shape
    dq, dk, dv = attention_b(np.ascontiguousarray(
        g.reshape(b, t, n_heads, d // n_heads).transpose(0, 2, 1, 3)), c_att)
    dqkv = np.concatenate([merge(dq), merge(dk), merge(dv)], axis=-1)
    dx, dw_qkv, db_qkv = linear_b(dqkv, c_in, w_qkv)
    return dx, dw_qkv, db_qkv, dw_out, db_out


def transformer_step(p, x, y, lr, layers=2, n_heads=4):
    def step():
        h, caches = x, []
        for i in range(layers):
            n = f"enc.layers.{i}."
            a, ca = _self_attention_f(h, p[n + "self_attn.in_proj_weight"],
                                      p[n + "self_attn.in_proj_bias"],
                                      p[n + "self_attn.out_proj.weight"],
                                      p[n + "self_attn.out_proj.bias"], n_heads, False)
            h1, cn1 = layernorm_f(h + a, p[n + "norm1.weight"], p[n + "norm1.bias"])
            f, cl1 = linear_f(h1, p[n + "linear1.weight"], p[n + "linear1.bias"])
            f, cr = relu_f(f)
            f, cl2 = linear_f(f, p[n + "linear2.weight"], p[n + "linear2.bias"])
            h, cn2 = layernorm_f(h1 + f, p[n + "norm2.weight"], p[n + "norm2.bias"])
            caches.append((ca, cn1, cl1, cr, cl2, cn2))
        seq = h.shape[1]
        logits, ch = linear_f(h.mean(1), p["head.weight"], p["head.bias"])
        loss, g = cross_entropy(logits, y)
        grads = {}
        g, grads["head.weight"], grads["head.bias"] = linear_b(g, ch, p["head.weight"])
        g = np.broadcast_to((g / seq)[:, None, :], h.shape)
        for i in reversed(range(layers)):
            n = f"enc.layers.{i}."
            ca, cn1, cl1, cr, cl2, cn2 = caches[i]
            g, grads[n + "norm2.weight"], grads[n + "norm2.bias"] = layernorm_b(g, cn2)
            f, grads[n + "linear2.weight"], grads[n + "linear2.bias"] = linear_b(
                g, cl2, p[n + "linear2.weight"])
            f, grads[n + "linear1.weight"], grads[n + "linear1.bias"] = linear_b(
                relu_b(f, cr), cl1, p[n + "linear1.weight"])
            g, grads[n + "norm1.weight"], grads[n + "norm1.bias"] = layernorm_b(g + f, cn1)
            a, *sa = _self_attention_b(g, ca)
            for key, value in zip(("in_proj_weight", "in_proj_bias", "out_proj.weight",
                                   "out_proj.bias"), sa):
                grads[n + "self_attn." + key] = value
            g = g + a
        sgd(p, grads, lr)
        return loss

    return step


def gpt_step(p, idx, y, lr, n_heads=4):
    b, t = idx.shape
    vocab = p["wte.weight"].shape[0]
    onehot = np.eye(vocab, dtype=np.float32)[idx.reshape(-1)]

    def step():
        x = p["wte.weight"][idx] + p["wpe.weight"][:t]
        h, c1 = layernorm_f(x, p["ln1.weight"], p["ln1.bias"])
        a, ca = _self_attention_f(h, p["c_attn.weight"], p["c_attn.bias"], p["c_proj.weight"],
                                  p["c_proj.bias"], n_heads, True)
        x = x + a
        h, c2 = layernorm_f(x, p["ln2.weight"], p["ln2.bias"])
        f, cf = linear_f(h, p["fc.weight"], p["fc.bias"])
        f, cg = gelu_f(f)
        f, cp = linear_f(f, p["proj.weight"], p["proj.bias"])
        x = x + f
        h, cl = layernorm_f(x, p["lnf.weight"], p["lnf.bias"])
        logits, ch = linear_f(h, p["head.weight"])
        loss, g = cross_entropy(logits.reshape(b * t, -1), y.reshape(-1))
        grads = {}
        g, grads["head.weight"], _ = linear_b(g.reshape(b, t, -1), ch, p["head.weight"])
        g, grads["lnf.weight"], grads["lnf.bias"] = layernorm_b(g, cl)
        f, grads["proj.weight"], grads["proj.bias"] = linear_b(g, cp, p["proj.weight"])
        f, grads["fc.weight"], grads["fc.bias"] = linear_b(gelu_b(f, cg), cf, p["fc.weight"])
        f, grads["ln2.weight"], grads["ln2.bias"] = layernorm_b(f, c2)
        g = g + f
        a, *sa = _self_attention_b(g, ca)
        for key, value in zip(("c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"),
                              sa):
            grads[key] = value
        a, grads["ln1.weight"], grads["ln1.bias"] = layernorm_b(a, c1)
        g = g + a
        grads["wte.weight"] = onehot.T @ g.reshape(b * t, -1)
        grads["wpe.weight"] = np.zeros_like(p["wpe.weight"])
        grads["wpe.weight"][:t] = g.sum(0)
        sgd(p, grads, lr)
        return loss

    return step
