"""LSTM and GRU layers over a whole sequence on host arrays, forward and backward.

Each step is one GEMM of the row [x_t, h_{t-1}, 1] with [W_ih^T; W_hh^T; b] straight into
the step's gates (see recurrent_rows), then a few in-place ufuncs on whole (N, 4H) rows
where they can be; the backward writes every step's gate gradients into one array, so
that the input gradient is one GEMM and the weight and bias gradients one more, over all
steps after the loop. Measured (one thread, T 64, N 32, I 16, H 64, float32, loaded
machine, min of interleaved runs): LSTM forward 7.0 -> 2.3-2.9 ms, GRU forward 6.1 -> 3.0.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu.recurrent_rows import (
    flat_rows,
    own_base,
    own_rows,
    previous,
    scratch,
    step_rows,
    weight_grads,
)

#: Bytes of gate activations (or of their gradients' factors) made a block of steps at a
#: time: a block stays in L2 between the GEMM that makes it and the loop that reads it.
#: The backward took 4.1 ms over blocks of 512 KB, 4.5 over 128 KB, 5.1 over 32 KB, 7.5
#: unblocked (every pass over (T, N, 4H) arrays went to memory).
BLOCK_BYTES = 512 * 2**10


def _block(t_len, step_bytes):
    """Time steps per block: BLOCK_BYTES of ``step_bytes`` each, at least one."""
    return max(1, min(t_len, BLOCK_BYTES // max(1, step_bytes)))


def _lstm_affine(hid, dtype):
    """(scale, shift) rows (4H,) in PyTorch's gate order (i, f, g, o): the pre-activation's
    sigmoid rows are halved (exact in binary floating point), so that one tanh over the
    whole row, times scale plus shift, is sigmoid(a) = 0.5 tanh(a / 2) + 0.5 for i, f, o
    and tanh(a) for g."""
    scale = np.full(4 * hid, 0.5, dtype)
    scale[2 * hid:3 * hid] = 1
    shift = np.full(4 * hid, 0.5, dtype)
    shift[2 * hid:3 * hid] = 0
    return scale, shift


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    return lstm_impl(x, h0, c0, w_ih, w_hh, bias)


def lstm_impl(x, h0, c0, w_ih, w_hh, bias):
    """Per step one GEMM of [x_t, h_{t-1}, 1] (see step_rows) straight into the step's gates,
    then 8 ufuncs, all in PyTorch's gate order (``gates`` is made in place). ``out`` is a
    view of the rows (the backward finds them again through it)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    scale, shift = _lstm_affine(hid, dtype)
    w = np.empty((size + hid + 1, 4 * hid), dtype)  # [W_ih^T; W_hh^T; b], sigmoid columns halved
    w[:size] = w_ih.T
    w[size:-1] = w_hh.T
    w[-1] = bias
    w *= scale
    # NOTE: whole (N, 4H) rows of scale and shift, not (4H,) broadcasts: the broadcast
    # runs NumPy's inner loop once per batch row (2.4 + 1.9 us a step at N 32, against
    # 0.6 + 0.6 for one contiguous run)
    scale, shift = (np.broadcast_to(v, (n, 4 * hid)).copy() for v in (scale, shift))
    rows = step_rows(x, h0)
    gates = np.empty((t_len, n, 4 * hid), dtype)
    cs = np.empty((2, t_len + 1, n, hid), dtype)  # c0, every step's c; their tanh
    cs[0, 0] = c0
    ig = np.empty((n, hid), dtype)
    # every step's views come from iterating arrays (made in C), not from indexing in
    # the loop (~1 us of Python a step)
    i, f, g, o = gates.reshape(t_len, n, 4, hid).transpose(2, 0, 1, 3)
    out = rows[1:, :, size:-1]
    for a, row, i_t, f_t, g_t, o_t, c_prev, c, t_c, h in zip(
            gates, rows, i, f, g, o, cs[0], cs[0, 1:], cs[1, 1:], out):
        np.dot(row, w, out=a)
        np.tanh(a, out=a)
        a *= scale
        a += shift
        np.multiply(f_t, c_prev, out=c)
        c += np.multiply(i_t, g_t, out=ig)
        np.multiply(o_t, np.tanh(c, out=t_c), out=h)
    return out, gates, cs[0, 1:]


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                        needs_dx):
    return lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                              needs_dx)


def lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                       needs_dx=True):
    """The factors of the gate gradients that do not depend on the gradients (the sigmoid
    and tanh derivatives times c_{t-1}, g, i or tanh(c_t), and o (1 - tanh(c_t)^2)) are
    made a block of steps at a time, gate-major ((5, b, N, H) from one copy of the
    block's gates: every later pass over a gate is one contiguous run, where a gate of
    the (b, N, 4H) rows is N b runs of H and NumPy's cost per run made those passes 1.3
    ms of a 5 ms backward). A step is 7 NumPy calls: dh += grad_out[t], dc += dh k_c
    (two), the i, f, g gradients as one product with dc, o's with dh, dc *= f_t and one
    GEMM (a fused [o, k_c] product into a fifth gate slot cost more in strided writes
    than the call it saved). The weight gradients are one GEMM over all steps after the
    loop; the input gradient one more, where ``needs_dx``."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    block = _block(t_len, n * 4 * hid * dtype.itemsize)
    # gate-major factors of a block: [i, f, g, o, k_c]; the activations s of the block
    fac = scratch("factors", (5, block, n, hid), dtype)
    act = scratch("acts", (4, block, n, hid), dtype)
    own = own_base(cells, (2, t_len + 1, n, hid), (0, slice(1, None)))
    da = scratch("da", (t_len, n, 4, hid), dtype)
    da_rows = da.reshape(t_len, n, 4 * hid)
    w_back = np.ascontiguousarray(w_hh, dtype)  # np.dot's out= takes only its own dtype
    dh = np.zeros((n, hid), dtype)
    dc = np.array(grad_c, dtype=dtype, copy=True)
    tmp = np.empty((n, hid), dtype)
    for stop in range(t_len, 0, -block):
        start = max(0, stop - block)
        b = stop - start
        f5, s = fac[:, :b], act[:, :b]
        np.copyto(s, gates[start:stop].reshape(b, n, 4, hid).transpose(2, 0, 1, 3))
        d = np.subtract(1, s, out=f5[:4])  # the derivatives: s (1 - s), and 1 - g^2
        d[:2] *= s[:2]
        d[3] *= s[3]
        d[2] *= np.add(s[2], 1, out=f5[4])
        if own is None:
            c_prev = previous(cells, c0, start, stop)
            t_c = np.tanh(cells[start:stop], out=scratch("tc", (block, n, hid), dtype)[:b])
        else:  # c_{t-1} and tanh(c_t) as the forward kept them
            c_prev, t_c = own[0, start:stop], own[1, start + 1:stop + 1]
        kc = np.multiply(t_c, t_c, out=f5[4])  # o (1 - tanh(c)^2)
        np.subtract(1, kc, out=kc)
        kc *= s[3]
        d[0] *= s[2]  # F_i g, F_f c_{t-1}, F_g i, F_o tanh(c)
        d[1] *= c_prev
        d[2] *= s[0]
        d[3] *= t_c
        steps = (grad_out[start:stop], kc, f5[:3].transpose(1, 0, 2, 3),
                 da[start:stop, :, :3].transpose(0, 2, 1, 3), f5[3], da[start:stop, :, 3],
                 s[1], da_rows[start:stop])
        for g_t, kc_t, ifg_t, da_ifg, f_o, da_o, f_t, da_t in zip(*(v[::-1] for v in steps)):
            dh += g_t
            dc += np.multiply(dh, kc_t, out=tmp)
            np.multiply(ifg_t, dc, out=da_ifg)
            np.multiply(f_o, dh, out=da_o)
            dc *= f_t
            np.dot(da_t, w_back, out=dh)
    flat = flat_rows(da_rows)
    dx = (flat @ w_ih).reshape(t_len, n, size) if needs_dx else None
    return (dx, dh, dc) + weight_grads(flat, x, h0, out)


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    return gru_impl(x, h0, w_ih, w_hh, b_ih, b_hh)


def gru_impl(x, h0, w_ih, w_hh, b_ih, b_hh):
    """Per step one GEMM of [x_t, h_{t-1}, 1] (see step_rows) straight into the step's saved
    row: [W_ih^T; W_hh^T; b] has the columns (r, z: both projections and biases, halved;
    p_n: x's and b_in; q_n: h's and b_hn), which is the saved layout (r, z, n, q_n) with
    p_n where n goes; then 9 ufuncs (r, z = 0.5 tanh + 0.5 in place, n = tanh(p_n + r
    q_n) in place, h = n + z (h - n) into the next row's h slot). ``out`` is a view of
    the rows (the backward finds them again through it)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    w = np.zeros((size + hid + 1, 4 * hid), dtype)
    w[:size, :3 * hid] = w_ih.T
    w[size:-1, :2 * hid] = w_hh[:2 * hid].T
    w[size:-1, 3 * hid:] = w_hh[2 * hid:].T
    w[-1, :3 * hid] = b_ih
    w[-1, :2 * hid] += b_hh[:2 * hid]
    w[-1, 3 * hid:] = b_hh[2 * hid:]
    w[:, :2 * hid] *= 0.5  # sigmoid(a) = 0.5 tanh(a / 2) + 0.5; halving is exact
    rows = step_rows(x, h0)
    saved = np.empty((t_len, n, 4 * hid), dtype)
    rq = np.empty((n, hid), dtype)
    for t in range(t_len):
        s = saved[t]
        np.matmul(rows[t], w, out=s)
        rz = np.tanh(s[:, :2 * hid], out=s[:, :2 * hid])
        rz *= 0.5
        rz += 0.5
        nn = s[:, 2 * hid:3 * hid]
        nn += np.multiply(s[:, :hid], s[:, 3 * hid:], out=rq)
        np.tanh(nn, out=nn)
        h_new = np.subtract(rows[t, :, size:-1], nn, out=rows[t + 1, :, size:-1])
        h_new *= s[:, hid:2 * hid]
        h_new += nn
    return rows[1:, :, size:-1], saved


@hookimpl
def gru_layer_backward(x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx):
    return gru_backward_impl(x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx)


def gru_backward_impl(x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx=True):
    """As the LSTM's: the factors that do not depend on the gradients are made a block of
    steps at a time, so that a step is 8 NumPy calls. The gradients of every step live in
    one (T, N, 4H) array ordered (p_n, p_r, p_z, q_n): the input projection's are its first
    3H columns (n, r, z: w_ih's rows are taken in that order), the recurrent one's its last
    3H (r, z, n), each a plain slice (p_r = q_r and p_z = q_z). The recurrent weight and
    bias gradients are one GEMM of the last 3H columns with [h_{t-1}, 1] (adjacent in the
    forward's rows), the input ones a GEMM with x and a GEMV with ones (one GEMM of all 4H
    columns with the whole rows did 30% more work, in unused corners)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    block = _block(t_len, n * 4 * hid * dtype.itemsize)
    rows = own_rows(out, x)
    if rows is None:
        rows = step_rows(x, h0)
        rows[1:, :, size:-1] = out
    h_prev = rows[:t_len, :, size:-1]
    # (b, N, 4, H) slots: dp_r = da_n * [0], dp_z = dh * [1], da_n = dh * [2]
    fac = scratch("gru_fac", (block, n, 4, hid), dtype)
    plus = scratch("gru_plus", (block, n, 4, hid), dtype)
    tmp_b = scratch("gru_tmp", (block, n, hid), dtype)
    grads = scratch("gru_grads", (t_len, n, 4, hid), dtype)
    g_rows = grads.reshape(t_len, n, 4 * hid)
    one = np.zeros(4 * hid, dtype)
    one[2 * hid:3 * hid] = 1
    dh = np.zeros((n, hid), dtype)
    back = np.empty((n, hid), dtype)
    for stop in range(t_len, 0, -block):
        start = max(0, stop - block)
        b = stop - start
        s_rows = saved[start:stop]
        sv = s_rows.reshape(b, n, 4, hid)
        r, z, nn = sv[:, :, 0], sv[:, :, 1], sv[:, :, 2]
        f, p = fac[:b], plus[:b]
        # whole rows: 1 - s, then (1 - s)(s + [0, 0, 1, 0]) = r (1 - r), z (1 - z), 1 - n^2
        np.subtract(1, s_rows, out=f.reshape(b, n, 4 * hid))
        np.add(s_rows, one, out=p.reshape(b, n, 4 * hid))
        p *= f
        np.multiply(f[:, :, 1], p[:, :, 2], out=f[:, :, 2])  # (1 - z)(1 - n^2)
        np.multiply(p[:, :, 0], sv[:, :, 3], out=f[:, :, 0])  # q_n r (1 - r)
        t_b = np.subtract(h_prev[start:stop], nn, out=tmp_b[:b])
        np.multiply(p[:, :, 1], t_b, out=f[:, :, 1])  # (h_prev - n) z (1 - z)
        for j in reversed(range(b)):
            t = start + j
            g = grads[t]
            dh += grad_out[t]
            dan = np.multiply(dh, f[j, :, 2], out=g[:, 0])
            np.multiply(dan, f[j, :, 0], out=g[:, 1])
            np.multiply(dh, f[j, :, 1], out=g[:, 2])
            np.multiply(dan, r[j], out=g[:, 3])
            dh *= z[j]
            np.matmul(g_rows[t, :, hid:], w_hh, out=back)
            dh += back
    flat = flat_rows(g_rows)
    dx = None
    if needs_dx:
        w_nrz = np.concatenate([w_ih[2 * hid:], w_ih[:2 * hid]])
        dx = (flat[:, :3 * hid] @ w_nrz).reshape(t_len, n, size)
    every = flat_rows(rows[:t_len])
    # (r, z, q_n) with [h_{t-1}, 1] (adjacent in the rows), (n, r, z) with x and ones
    d_hh = flat[:, hid:].T @ every[:, size:]
    d_nrz = flat[:, :3 * hid].T @ every[:, :size]
    db_nrz = np.ones(t_len * n, dtype) @ flat[:, :3 * hid]
    dw_ih = np.concatenate([d_nrz[hid:], d_nrz[:hid]])
    db_ih = np.concatenate([db_nrz[hid:], db_nrz[:hid]])
    dw_hh, db_hh = np.ascontiguousarray(d_hh[:, :-1]), np.ascontiguousarray(d_hh[:, -1])
    return dx, dh, dw_ih, dw_hh, db_ih, db_hh
