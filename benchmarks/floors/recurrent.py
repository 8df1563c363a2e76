"""LSTM and GRU floors: one layer, batch-first input, head on the mean over time.

The input projection of every time step is one GEMM, the recurrent loop one GEMM and a
few ufuncs per step, and the weight gradients one GEMM each over all steps."""

import numpy as np

from floors.layers import cross_entropy, linear_b, linear_f, sgd


def _sigmoid(x):
    out = np.multiply(x, 0.5)
    np.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def _head(p, hs, y, grads):
    """Mean over time, linear head, loss; returns (loss, dL/dh_t) (the same for every t)."""
    logits, ch = linear_f(hs.mean(0), p["head.weight"], p["head.bias"])
    loss, g = cross_entropy(logits, y)
    g, grads["head.weight"], grads["head.bias"] = linear_b(g, ch, p["head.weight"])
    return loss, g / hs.shape[0]


def lstm_step(p, x, y, lr):
    xt = np.ascontiguousarray(x.transpose(1, 0, 2))  # (T, B, I)
    t_len, batch, _ = xt.shape

    def step():
        wih, whh = p["rnn.weight_ih_l0"], p["rnn.weight_hh_l0"]
        hid = whh.shape[1]
        xp = xt @ wih.T
        xp += p["rnn.bias_ih_l0"] + p["rnn.bias_hh_l0"]
        acts = np.empty((t_len, batch, 4 * hid), np.float32)
        cs = np.empty((t_len + 1, batch, hid), np.float32)
        hs = np.empty((t_len + 1, batch, hid), np.float32)
        tcs = np.empty((t_len, batch, hid), np.float32)
        cs[0] = hs[0] = 0
        for t in range(t_len):
            a = xp[t] + hs[t] @ whh.T
            act = acts[t]
            act[:, :2 * hid] = _sigmoid(a[:, :2 * hid])
            np.tanh(a[:, 2 * hid:3 * hid], out=act[:, 2 * hid:3 * hid])
            act[:, 3 * hid:] = _sigmoid(a[:, 3 * hid:])
            i, f, g, o = (act[:, k * hid:(k + 1) * hid] for k in range(4))
            np.multiply(f, cs[t], out=cs[t + 1])
            cs[t + 1] += i * g
            np.tanh(cs[t + 1], out=tcs[t])
            np.multiply(o, tcs[t], out=hs[t + 1])
        grads = {}
        loss, dh_out = _head(p, hs[1:], y, grads)
        da = np.empty_like(acts)
        dh = np.zeros((batch, hid), np.float32)
        dc = np.zeros((batch, hid), np.float32)
        for t in reversed(range(t_len)):
            act = acts[t]
            i, f, g, o = (act[:, k * hid:(k + 1) * hid] for k in range(4))
            dh += dh_out
            tc = tcs[t]
            dc += dh * o * (1 - tc * tc)
            d = da[t]
            d[:, :hid] = dc * g * i * (1 - i)
            d[:, hid:2 * hid] = dc * cs[t] * f * (1 - f)
            d[:, 2 * hid:3 * hid] = dc * i * (1 - g * g)
            d[:, 3 * hid:] = dh * tc * o * (1 - o)
            dc *= f
            dh = d @ whh
        flat = da.reshape(-1, 4 * hid)
        grads["rnn.weight_hh_l0"] = flat.T @ hs[:-1].reshape(-1, hid)
        grads["rnn.weight_ih_l0"] = flat.T @ xt.reshape(t_len * batch, -1)
        grads["rnn.bias_ih_l0"] = grads["rnn.bias_hh_l0"] = flat.sum(0)
        sgd(p, grads, lr)
        return loss

    return step


def gru_step(p, x, y, lr):
    xt = np.ascontiguousarray(x.transpose(1, 0, 2))
    t_len, batch, _ = xt.shape

    def step():
        wih, whh, bhh = p["rnn.weight_ih_l0"], p["rnn.weight_hh_l0"], p["rnn.bias_hh_l0"]
        hid = whh.shape[1]
        xp = xt @ wih.T
        xp += p["rnn.bias_ih_l0"]
        rz = np.empty((t_len, batch, 2 * hid), np.float32)
        ns = np.empty((t_len, batch, hid), np.float32)
        hns = np.empty((t_len, batch, hid), np.float32)
        hs = np.empty((t_len + 1, batch, hid), np.float32)
        hs[0] = 0
        for t in range(t_len):
            hp = hs[t] @ whh.T
            hp += bhh
            rz[t] = _sigmoid(xp[t, :, :2 * hid] + hp[:, :2 * hid])
            r, z = rz[t, :, :hid], rz[t, :, hid:]
            hns[t] = hp[:, 2 * hid:]
            np.tanh(xp[t, :, 2 * hid:] + r * hns[t], out=ns[t])
            n = ns[t]
            hs[t + 1] = n + z * (hs[t] - n)
        grads = {}
        loss, dh_out = _head(p, hs[1:], y, grads)
        dxp = np.empty((t_len, batch, 3 * hid), np.float32)
        dhp = np.empty((t_len, batch, 3 * hid), np.float32)
        dh = np.zeros((batch, hid), np.float32)
        for t in reversed(range(t_len)):
            r, z, n = rz[t, :, :hid], rz[t, :, hid:], ns[t]
            dh += dh_out
            dan = dh * (1 - z) * (1 - n * n)
            dxp[t, :, :hid] = dhp[t, :, :hid] = dan * hns[t] * r * (1 - r)
            dxp[t, :, hid:2 * hid] = dhp[t, :, hid:2 * hid] = dh * (hs[t] - n) * z * (1 - z)
            dxp[t, :, 2 * hid:] = dan
            dhp[t, :, 2 * hid:] = dan * r
            dh = dh * z + dhp[t] @ whh
        fx, fh = dxp.reshape(-1, 3 * hid), dhp.reshape(-1, 3 * hid)
        grads["rnn.weight_hh_l0"] = fh.T @ hs[:-1].reshape(-1, hid)
        grads["rnn.weight_ih_l0"] = fx.T @ xt.reshape(t_len * batch, -1)
        grads["rnn.bias_ih_l0"], grads["rnn.bias_hh_l0"] = fx.sum(0), fh.sum(0)
        sgd(p, grads, lr)
        return loss

    return step
