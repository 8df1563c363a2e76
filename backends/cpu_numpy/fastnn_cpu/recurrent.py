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


#: The gates in the order the loops keep them: the three sigmoid gates first (i, f, o), so
#: that one tanh over the whole row and one affine map over the first 3H columns activate
#: them all; g (tanh) last. The hooks' gates stay in PyTorch's order (i, f, g, o).
_ORDER = (0, 1, 3, 2)


def _gate_rows(w, hid, scale_sigmoid):
    """w (4H, ...) rows reordered to (i, f, o, g), the sigmoid ones times 0.5:
    sigmoid(a) = 0.5 * tanh(a / 2) + 0.5, and halving is exact in binary floating point."""
    quarters = w.reshape(4, hid, *w.shape[1:])[list(_ORDER)]
    if scale_sigmoid:
        quarters = quarters * np.array([0.5, 0.5, 0.5, 1.0], dtype=w.dtype).reshape(
            (4,) + (1,) * (quarters.ndim - 1))
    return quarters.reshape(w.shape)


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    return lstm_impl(x, h0, c0, w_ih, w_hh, bias)


def lstm_impl(x, h0, c0, w_ih, w_hh, bias):
    """Per step: one GEMM, its add to the step's input projection, and 8 ufuncs on (N, .)
    rows (PyTorch's fused cell does one GEMM and one kernel)."""
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    acts = (_flat(x) @ _gate_rows(w_ih, hid, True).T).reshape(t_len, n, 4 * hid)
    acts += _gate_rows(bias, hid, True)
    # NOTE: contiguous: OpenBLAS ran h @ w_t 2x slower with w_t a transposed view.
    w_t = np.ascontiguousarray(_gate_rows(w_hh, hid, True).T)
    cells = np.empty((t_len, n, hid), dtype)
    out = np.empty((t_len, n, hid), dtype)
    tanh_c = np.empty((n, hid), dtype)
    rec = np.empty((n, 4 * hid), dtype)
    ig = np.empty((n, hid), dtype)
    sig, i, f, o, g = (acts[..., :3 * hid], acts[..., :hid], acts[..., hid:2 * hid],
                       acts[..., 2 * hid:3 * hid], acts[..., 3 * hid:])
    h, c = h0, c0
    for t in range(t_len):
        a = acts[t]
        np.matmul(h, w_t, out=rec)
        a += rec
        np.tanh(a, out=a)
        s = sig[t]
        s *= 0.5
        s += 0.5
        c = np.multiply(f[t], c, out=cells[t])
        c += np.multiply(i[t], g[t], out=ig)
        h = np.multiply(o[t], np.tanh(c, out=tanh_c), out=out[t])
    gates = np.empty_like(acts)  # back to (i, f, g, o): three slab copies
    gates[..., :2 * hid] = acts[..., :2 * hid]
    gates[..., 2 * hid:3 * hid] = g
    gates[..., 3 * hid:] = o
    return out, gates, cells


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c):
    return lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c)


#: Time steps whose gate-gradient factors are made at once: (steps, N, 4H) arrays of about
#: half of L2 (1 MB here), reused from block to block (made for all steps at once, they
#: ran 3x slower than the loop that reads them: every pass went to memory; the backward
#: took 4.1 ms over blocks of 512 KB, 4.5 over 128 KB, 5.1 over 32 KB, 7.5 unblocked).
BLOCK_BYTES = 512 * 2**10


def lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c):
    """The factors of the gate gradients that do not depend on the gradients (the sigmoid
    and tanh derivatives times c_{t-1}, g, i or tanh(c_t)) are made a block of steps at a
    time, so that a step is 6 NumPy calls: dh += grad_out[t], dc += dh * k_t, the i, f, g
    gradients as one product with dc, o's with dh, dc *= f_t and one GEMM."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    block = max(1, min(t_len, BLOCK_BYTES // max(1, n * 4 * hid * dtype.itemsize)))
    c_prev = np.concatenate([np.asarray(c0, dtype)[None], cells[:-1]])
    factors = np.empty((block, n, 4, hid), dtype)  # [i, f, g, o]: da = factor * dc or dh
    k_c = np.empty((block, n, hid), dtype)  # dc += dh * o * (1 - tanh(c)^2)
    tc = np.empty((block, n, hid), dtype)
    da = np.empty((t_len, n, 4, hid), dtype)
    da_rows = da.reshape(t_len, n, 4 * hid)
    dh = np.zeros((n, hid), dtype)
    dc = np.array(grad_c, dtype=dtype, copy=True)
    dc_b = dc[:, None, :]
    tmp = np.empty((n, hid), dtype)
    for stop in range(t_len, 0, -block):
        start = max(0, stop - block)
        b = stop - start
        gt = gates[start:stop].reshape(b, n, 4, hid)
        i, f, g, o = gt[:, :, 0], gt[:, :, 1], gt[:, :, 2], gt[:, :, 3]
        fac = factors[:b]
        np.subtract(1, gt, out=fac)
        fac *= gt  # x (1 - x) for the sigmoid gates; g's is overwritten next
        np.multiply(g, g, out=fac[:, :, 2])
        np.subtract(1, fac[:, :, 2], out=fac[:, :, 2])
        fac[:, :, 0] *= g
        fac[:, :, 1] *= c_prev[start:stop]
        fac[:, :, 2] *= i
        t_c = np.tanh(cells[start:stop], out=tc[:b])
        fac[:, :, 3] *= t_c
        kc = np.multiply(t_c, t_c, out=k_c[:b])
        np.subtract(1, kc, out=kc)
        kc *= o
        ifg, f_o = fac[:, :, :3], fac[:, :, 3]
        for j in reversed(range(b)):
            t = start + j
            dh += grad_out[t]
            dc += np.multiply(dh, kc[j], out=tmp)
            np.multiply(ifg[j], dc_b, out=da[t, :, :3])
            np.multiply(f_o[j], dh, out=da[t, :, 3])
            dc *= f[j]
            np.matmul(da_rows[t], w_hh, out=dh)
    flat = _flat(da_rows)
    previous = np.concatenate([np.asarray(h0, dtype)[None], out[:-1]]).reshape(t_len * n, hid)
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
