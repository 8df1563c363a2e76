"""GRU layers over a whole sequence on host arrays, forward and backward, batch-major (the
time loop in C where fastnn_cpu.native builds it); the rows [x_t, h_{t-1}, 1] and the
backward's blocks of steps as the LSTM's in :mod:`fastnn_cpu.recurrent`."""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import native
from fastnn_cpu.mkl_gemm import matmul
from fastnn_cpu.recurrent import _block
from fastnn_cpu.recurrent_rows import flat_rows, own_rows, scratch, step_rows


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    return gru_impl(x, h0, w_ih, w_hh, b_ih, b_hh)


def gru_impl(x, h0, w_ih, w_hh, b_ih, b_hh):
    """Per step one GEMM of [x_t, h_{t-1}, 1] (see step_rows) straight into the step's saved
    row: [W_ih^T; W_hh^T; b] has the columns (r, z: both projections and biases, halved;
    p_n: x's and b_in; q_n: h's and b_hn), which is the saved layout (r, z, n, q_n) with
    p_n where n goes; then 9 ufuncs (r, z = 0.5 tanh + 0.5 in place, n = tanh(p_n + r
    q_n) in place, h = n + z (h - n) into the next row's h slot). ``out`` is a view of
    the rows (the backward finds them again through it). Where fastnn_cpu.native built
    its C loops, the loop is one call of them on the same arrays."""
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
    lib = native.library() if dtype.char in "fd" and t_len * n * hid else None
    if lib is not None:  # the whole loop in one C call, on the same arrays
        lib.gru_forward[dtype.char](lib.gemm[dtype.char], lib.ilp64, t_len, n, size, hid,
                                    native.address(w), native.address(rows),
                                    native.address(saved))
        return rows[1:, :, size:-1], saved
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
    columns with the whole rows did 30% more work, in unused corners). Where
    fastnn_cpu.native built its C loops, the time loop is one call of them (the factors
    made per element, in the step's pass)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    rows = own_rows(out, x)
    if rows is None:
        rows = step_rows(x, h0)
        rows[1:, :, size:-1] = out
    grads = scratch("gru_grads", (t_len, n, 4, hid), dtype)
    g_rows = grads.reshape(t_len, n, 4 * hid)
    lib = native.library() if dtype.char in "fd" and t_len * n * hid else None
    if lib is not None:
        dh = _native_gru_backward(lib, rows, saved, grad_out, w_hh, g_rows)
    else:
        dh = _numpy_gru_backward(rows, saved, grad_out, w_hh, grads)
    flat = flat_rows(g_rows)
    dx = None
    if needs_dx:
        w_nrz = np.concatenate([w_ih[2 * hid:], w_ih[:2 * hid]])
        dx = matmul(flat[:, :3 * hid], w_nrz).reshape(t_len, n, size)
    every = flat_rows(rows[:t_len])
    # (r, z, q_n) with [h_{t-1}, 1] (adjacent in the rows), (n, r, z) with x and ones
    d_hh = matmul(flat[:, hid:].T, every[:, size:])
    d_nrz = matmul(flat[:, :3 * hid].T, every[:, :size])
    db_nrz = np.ones(t_len * n, dtype) @ flat[:, :3 * hid]
    dw_ih = np.concatenate([d_nrz[hid:], d_nrz[:hid]])
    db_ih = np.concatenate([db_nrz[hid:], db_nrz[:hid]])
    dw_hh, db_hh = np.ascontiguousarray(d_hh[:, :-1]), np.ascontiguousarray(d_hh[:, -1])
    return dx, dh, dw_ih, dw_hh, db_ih, db_hh


def _native_gru_backward(lib, rows, saved, grad_out, w_hh, g_rows):
    """The GRU backward's time loop in C (fastnn_cpu.native): fills ``g_rows`` (T, N, 4H)
    and returns h_0's gradient."""
    t_len, n, four = g_rows.shape
    hid = four // 4
    dtype = g_rows.dtype
    size = rows.shape[2] - hid - 1
    saved = np.ascontiguousarray(saved, dtype)
    up = np.ascontiguousarray(grad_out, dtype)
    w = np.ascontiguousarray(w_hh, dtype)
    dh = np.zeros((n, hid), dtype)
    lib.gru_backward[dtype.char](
        lib.gemm[dtype.char], lib.ilp64, t_len, n, size, hid, native.address(w),
        native.address(saved), native.address(rows), native.address(up),
        native.address(dh), native.address(g_rows))
    return dh


def _numpy_gru_backward(rows, saved, grad_out, w_hh, grads):
    """The GRU backward's time loop in NumPy calls, as :func:`_native_gru_backward`."""
    t_len, n, _, hid = grads.shape
    dtype = grads.dtype
    size = rows.shape[2] - hid - 1
    block = _block(t_len, n * 4 * hid * dtype.itemsize)
    g_rows = grads.reshape(t_len, n, 4 * hid)
    h_prev = rows[:t_len, :, size:-1]
    # (b, N, 4, H) slots: dp_r = da_n * [0], dp_z = dh * [1], da_n = dh * [2]
    fac = scratch("gru_fac", (block, n, 4, hid), dtype)
    plus = scratch("gru_plus", (block, n, 4, hid), dtype)
    tmp_b = scratch("gru_tmp", (block, n, hid), dtype)
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
    return dh
