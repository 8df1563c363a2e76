"""LSTM and GRU layers over a whole sequence on host arrays, forward and backward.

The input projection of every step is one GEMM; each step is one GEMM with the recurrent
weight and a few in-place ufuncs on preallocated (T, N, .) arrays; the backward pass
writes every step's gate gradients into one array, so the weight gradients are one GEMM
each over all steps (PyTorch's fused cell does the same per step).
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl


def _sigmoid(x, out):
    """sigmoid(x) into out: 0.5 * tanh(x / 2) + 0.5 (never overflows)."""
    np.multiply(x, 0.5, out=out)
    np.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def _flat(a):
    return a.reshape(-1, a.shape[-1])


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    xp = (_flat(x) @ w_ih.T).reshape(t_len, n, 4 * hid)
    xp += bias
    w_t = w_hh.T
    gates = np.empty((t_len, n, 4 * hid), x.dtype)
    cells = np.empty((t_len, n, hid), x.dtype)
    out = np.empty((t_len, n, hid), x.dtype)
    h, c = h0, c0
    for t in range(t_len):
        a = xp[t]
        a += h @ w_t
        act = gates[t]
        _sigmoid(a[:, :2 * hid], act[:, :2 * hid])
        np.tanh(a[:, 2 * hid:3 * hid], out=act[:, 2 * hid:3 * hid])
        _sigmoid(a[:, 3 * hid:], act[:, 3 * hid:])
        c_new = np.multiply(act[:, hid:2 * hid], c, out=cells[t])
        c_new += act[:, :hid] * act[:, 2 * hid:3 * hid]
        h = np.tanh(c_new, out=out[t])
        h *= act[:, 3 * hid:]
        c = c_new
    return out, gates, cells


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c):
    t_len, n, size = x.shape
    hid = h0.shape[1]
    da = np.empty((t_len, n, 4 * hid), x.dtype)
    dh = np.zeros((n, hid), x.dtype)
    dc = np.array(grad_c, dtype=x.dtype, copy=True)
    for t in reversed(range(t_len)):
        act = gates[t]
        i, f, g, o = (act[:, k * hid:(k + 1) * hid] for k in range(4))
        dh += grad_out[t]
        tc = np.tanh(cells[t])
        d = da[t]
        np.multiply(dh, tc, out=d[:, 3 * hid:])
        d[:, 3 * hid:] *= o * (1 - o)
        tc *= tc
        np.subtract(1, tc, out=tc)
        tc *= o
        tc *= dh
        dc += tc
        c_prev = cells[t - 1] if t else c0
        np.multiply(dc, g, out=d[:, :hid])
        d[:, :hid] *= i * (1 - i)
        np.multiply(dc, c_prev, out=d[:, hid:2 * hid])
        d[:, hid:2 * hid] *= f * (1 - f)
        np.multiply(dc, i, out=d[:, 2 * hid:3 * hid])
        d[:, 2 * hid:3 * hid] *= 1 - g * g
        dc *= f
        dh = d @ w_hh
    flat = _flat(da)
    previous = np.concatenate([h0[None], out[:-1]]).reshape(t_len * n, hid)
    dx = (flat @ w_ih).reshape(t_len, n, size)
    return dx, dh, dc, flat.T @ _flat(x), flat.T @ previous, flat.sum(0)


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    xp = (_flat(x) @ w_ih.T).reshape(t_len, n, 3 * hid)
    xp += b_ih
    w_t = w_hh.T
    out = np.empty((t_len, n, hid), x.dtype)
    saved = np.empty((t_len, n, 4 * hid), x.dtype)
    h = h0
    for t in range(t_len):
        q = h @ w_t
        q += b_hh
        s = saved[t]
        rz = np.add(xp[t, :, :2 * hid], q[:, :2 * hid], out=s[:, :2 * hid])
        _sigmoid(rz, rz)
        s[:, 3 * hid:] = q[:, 2 * hid:]
        nn = np.multiply(s[:, :hid], q[:, 2 * hid:], out=s[:, 2 * hid:3 * hid])
        nn += xp[t, :, 2 * hid:]
        np.tanh(nn, out=nn)
        h_new = np.subtract(h, nn, out=out[t])
        h_new *= s[:, hid:2 * hid]
        h_new += nn
        h = h_new
    return out, saved


@hookimpl
def gru_layer_backward(x, h0, w_ih, w_hh, out, saved, grad_out):
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dp = np.empty((t_len, n, 3 * hid), x.dtype)
    dq = np.empty((t_len, n, 3 * hid), x.dtype)
    dh = np.zeros((n, hid), x.dtype)
    for t in reversed(range(t_len)):
        s = saved[t]
        r, z, nn, qn = (s[:, k * hid:(k + 1) * hid] for k in range(4))
        h_prev = out[t - 1] if t else h0
        dh += grad_out[t]
        dan = dh * (1 - z) * (1 - nn * nn)
        np.multiply(dan, qn * r * (1 - r), out=dp[t, :, :hid])
        np.multiply(dh * (h_prev - nn), z * (1 - z), out=dp[t, :, hid:2 * hid])
        dp[t, :, 2 * hid:] = dan
        dq[t, :, :2 * hid] = dp[t, :, :2 * hid]
        np.multiply(dan, r, out=dq[t, :, 2 * hid:])
        dh = dh * z
        dh += dq[t] @ w_hh
    fp, fq = _flat(dp), _flat(dq)
    previous = np.concatenate([h0[None], out[:-1]]).reshape(t_len * n, hid)
    dx = (fp @ w_ih).reshape(t_len, n, size)
    return dx, dh, fp.T @ _flat(x), fq.T @ previous, fp.sum(0), fq.sum(0)
