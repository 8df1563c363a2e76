"""LSTM layers over a whole sequence on host arrays, forward and backward (the time loop
in C where fastnn_cpu.native builds it); the GRU is :mod:`fastnn_cpu.recurrent_gru`, on
the same rows and blocks.

Each step is one GEMM of the row [x_t, h_{t-1}, 1] with [W_ih^T; W_hh^T; b] straight into
the step's gates (the LSTM's feature-major: the transposed product, see lstm_impl), then
a few in-place ufuncs on whole rows or gates where they can be; the backward writes every
step's gate gradients into one array, so that the input gradient is one GEMM and the
weight and bias gradients one more, over all steps after the loop. Measured (one thread,
T 64, N 32, I 16, H 64, float32, loaded machine, min of interleaved runs): LSTM forward
7.0 -> 2.3-2.9 ms, GRU forward 6.1 -> 3.0.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import native
from fastnn_cpu.mkl_gemm import matmul
from fastnn_cpu.recurrent_rows import (
    own_base,
    previous,
    scratch,
)

#: Bytes of gate activations (or of their gradients' factors) made a block of steps at a
#: time: a block stays in L2 between the GEMM that makes it and the loop that reads it.
#: The backward took 4.1 ms over blocks of 512 KB, 4.5 over 128 KB, 5.1 over 32 KB, 7.5
#: unblocked (every pass over (T, N, 4H) arrays went to memory).
BLOCK_BYTES = 512 * 2**10


def _block(t_len, step_bytes):
    """Time steps per block: BLOCK_BYTES of ``step_bytes`` each, at least one."""
    return max(1, min(t_len, BLOCK_BYTES // max(1, step_bytes)))


def _lstm_weights(w_ih, w_hh, bias, dtype):
    """[W_ih, W_hh, b] (4H, I + H + 1) with the sigmoid gates' rows halved (exact in binary
    floating point), and (scale, shift) rows (4H, 1) in PyTorch's gate order (i, f, g, o),
    so that one tanh over a step's whole pre-activation, times scale plus shift, is
    sigmoid(a) = 0.5 tanh(a / 2) + 0.5 for i, f, o and tanh(a) for g."""
    four, size = w_ih.shape
    hid = four // 4
    w = np.empty((four, size + hid + 1), dtype)
    w[:, :size] = w_ih
    w[:, size:-1] = w_hh
    w[:, -1] = bias
    scale = np.full((four, 1), 0.5, dtype)
    scale[2 * hid:3 * hid] = 1
    shift = np.full((four, 1), 0.5, dtype)
    shift[2 * hid:3 * hid] = 0
    w *= scale
    return w, scale, shift


def _feature_major(a):
    """(T, N, F) ``a`` as (T, F, N), C-contiguous: the array behind it where ``a`` is the
    forward's transposed view (no copy), else a copy."""
    t = a.transpose(0, 2, 1)
    return t if t.flags.c_contiguous else np.ascontiguousarray(t)


def _lstm_rows(x, h0):
    """(T + 1, I + H + 1, N): step t's column block is [x_t; h_{t-1}; 1]^T, h0 in step 0's
    (as step_rows, feature-major); the forward writes h_t into step t + 1's h rows."""
    t_len, n, size = x.shape
    rows = np.empty((t_len + 1, size + h0.shape[1] + 1, n), x.dtype)
    rows[:t_len, :size] = x.transpose(0, 2, 1)
    rows[t_len, :size] = 0
    rows[0, size:-1] = np.asarray(h0).T
    rows[:, -1] = 1
    return rows


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    return lstm_impl(x, h0, c0, w_ih, w_hh, bias)


def lstm_impl(x, h0, c0, w_ih, w_hh, bias):
    """Feature-major: a step is one GEMM of [W_ih, W_hh, b] (4H, K) with the step's
    [x_t; h_{t-1}; 1] (K, N) straight into its gates (4H, N), then 8 ufuncs, each gate a
    contiguous (H, N) block (in the batch-major (N, 4H) rows a gate is N runs of H: the
    three gate products cost 2.8-4.3 us a step where contiguous ones cost 0.8-2, and the
    (N, K) @ (K, 4H) GEMM 13-16 us where (4H, K) @ (K, N) costs 9; at T 64, N 32, I 16,
    H 64 the forward went from 2.07 to 1.43 ms, with the same values bit for bit). The
    outputs are transposed views of the feature-major arrays: ``out`` of the rows (the
    backward finds them again through it), ``gates`` and ``cells`` of their own.
    Where fastnn_cpu.native built its C loops, the loop is one call of them on the same
    arrays (a step's GEMM, then its gates, cell and state in one vectorised pass: 1.1
    against 1.5 ms at the shapes above)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    w, scale, shift = _lstm_weights(w_ih, w_hh, bias, dtype)
    rows = _lstm_rows(x, h0)
    gates = np.empty((t_len, 4 * hid, n), dtype)
    cs = np.empty((2, t_len + 1, hid, n), dtype)  # c0, every step's c; their tanh
    cs[0, 0] = np.asarray(c0).T
    lib = native.library() if dtype.char in "fd" and t_len * n * hid else None
    if lib is not None:  # the whole loop in one C call, on the same arrays
        lib.lstm_forward[dtype.char](lib.gemm[dtype.char], lib.ilp64, t_len, n, size, hid,
                                     native.address(w), native.address(rows),
                                     native.address(gates), native.address(cs))
        return (rows[1:, size:-1].transpose(0, 2, 1), gates.transpose(0, 2, 1),
                cs[0, 1:].transpose(0, 2, 1))
    # NOTE: whole (4H, N) blocks of scale and shift, not (4H, 1) broadcasts: a broadcast
    # runs NumPy's inner loop once per row
    scale, shift = (np.broadcast_to(v, (4 * hid, n)).copy() for v in (scale, shift))
    ig = np.empty((hid, n), dtype)
    # every step's views come from iterating arrays (made in C), not from indexing in
    # the loop (~1 us of Python a step)
    i, f, g, o = gates.reshape(t_len, 4, hid, n).transpose(1, 0, 2, 3)
    out = rows[1:, size:-1]
    for a, row, i_t, f_t, g_t, o_t, c_prev, c, t_c, h in zip(
            gates, rows, i, f, g, o, cs[0], cs[0, 1:], cs[1, 1:], out):
        np.dot(w, row, out=a)
        np.tanh(a, out=a)
        a *= scale
        a += shift
        np.multiply(f_t, c_prev, out=c)
        c += np.multiply(i_t, g_t, out=ig)
        np.multiply(o_t, np.tanh(c, out=t_c), out=h)
    return out.transpose(0, 2, 1), gates.transpose(0, 2, 1), cs[0, 1:].transpose(0, 2, 1)


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                        needs_dx):
    return lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                              needs_dx)


def _lstm_rows_of(x, h0, out):
    """The forward's feature-major rows (T + 1, K, N) behind ``out`` (one of its views),
    else rows made from x, h0 and ``out``."""
    t_len, n, size = x.shape
    hid = out.shape[2]
    rows = own_base(out.transpose(0, 2, 1), (t_len + 1, size + hid + 1, n),
                    (slice(1, None), slice(size, -1)))
    if rows is None:
        rows = _lstm_rows(x, h0)
        rows[1:, size:-1] = out.transpose(0, 2, 1)
    return rows


def _lstm_cells(c0, cells):
    """(c_{t-1}, tanh(c_t)) of every step, feature-major (T, H, N): views of the forward's
    own array where ``cells`` is its view, else made from ``cells``."""
    t_len, n, hid = cells.shape
    own = own_base(cells.transpose(0, 2, 1), (2, t_len + 1, hid, n), (0, slice(1, None)))
    if own is not None:
        return own[0, :-1], own[1, 1:]
    cf = _feature_major(cells)
    return previous(cf, np.asarray(c0, cells.dtype).T, 0, t_len), np.tanh(cf)


def lstm_backward_impl(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                       needs_dx=True):
    """Feature-major, as the forward. The factors of the gate gradients that do not
    depend on the gradients (the sigmoid and tanh derivatives times c_{t-1}, g, i or
    tanh(c_t), and o (1 - tanh(c_t)^2)) are made a block of steps at a time, gate-major
    (5, b, H, N) (each gate's pass b contiguous runs of H N), in 12 passes with the
    forward's h and tanh(c) (16 from the gates and c alone). A step is 7 NumPy calls:
    dh += grad_out[t], dc += dh k_c (two), the i, f, g gradients as one product with dc,
    o's with dh, dc *= f_t and one GEMM W_hh^T (H, 4H) @ da_t (4H, N) (8.8 us, where
    the batch-major (N, 4H) @ (4H, H) took 11.7 in the loop). After the loop the gate
    gradients (T, 4H, N) are copied to (4H, T N) (0.2 ms at T 64, N 32, H 64), so that
    the weight gradients are one GEMM over all steps; the input gradient one more,
    where ``needs_dx``. Where fastnn_cpu.native built its C loops, the whole time loop
    (factors, products and the step's GEMM) is one call of them instead, writing the
    gate gradients in the (4H, T N) layout directly (1.6 against 2.9 ms at T 64, N 32,
    I 16, H 64, one thread)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dtype = x.dtype
    w_back = np.ascontiguousarray(w_hh.T, dtype)  # np.dot's out= takes only its own dtype
    dh = np.zeros((hid, n), dtype)
    dc = np.array(np.asarray(grad_c).T, dtype=dtype, order="C")
    rows = _lstm_rows_of(x, h0, out)
    cs, tcs = _lstm_cells(c0, cells)
    lib = native.library() if dtype.char in "fd" and t_len * n * hid else None
    if lib is not None:
        flat = _native_backward(lib, gates, cs, tcs, grad_out, w_back, dh, dc)
    else:
        flat = _numpy_backward(gates, rows[1:, size:-1], cs, tcs, grad_out, w_back, dh, dc)
    dx = None
    if needs_dx:
        dx = matmul(np.asarray(w_ih).T, flat).reshape(size, t_len, n).transpose(1, 2, 0)
    every = np.ascontiguousarray(rows[:t_len].transpose(1, 0, 2)).reshape(-1, t_len * n)
    dw = matmul(flat, every.T)
    return (dx, np.ascontiguousarray(dh.T), np.ascontiguousarray(dc.T),
            np.ascontiguousarray(dw[:, :size]), np.ascontiguousarray(dw[:, size:-1]),
            np.ascontiguousarray(dw[:, -1]))


def _native_backward(lib, gates, cs, tcs, grad_out, w_back, dh, dc):
    """The backward's time loop in C (fastnn_cpu.native): updates ``dh`` and ``dc`` and
    returns the gate gradients as (4H, T N), step t's in columns t N to t N + N."""
    t_len, n, four = gates.shape
    hid = four // 4
    dtype = dh.dtype
    gt = _feature_major(gates)
    c_prev, t_cell = (_steps(a, dtype) for a in (cs, tcs))
    up = scratch("grad_out_all", (t_len, hid, n), dtype)
    np.copyto(up, grad_out.transpose(0, 2, 1))
    flat = scratch("da_flat", (four, t_len * n), dtype)
    item = dtype.itemsize
    lib.lstm_backward[dtype.char](
        lib.gemm[dtype.char], lib.ilp64, t_len, n, hid, native.address(w_back),
        native.address(gt), four * n, native.address(c_prev), c_prev.strides[0] // item,
        native.address(t_cell), t_cell.strides[0] // item, native.address(up),
        native.address(dh), native.address(dc), native.address(flat))
    return flat


def _steps(a, dtype):
    """``a`` (T, H, N) with each step's (H, N) block C-contiguous and the steps a whole
    number of elements apart (a copy where not)."""
    item = dtype.itemsize
    if (a.dtype == dtype and a.strides[1:] == (a.shape[2] * item, item)
            and a.strides[0] >= 0 and a.strides[0] % item == 0):
        return a
    return np.ascontiguousarray(a, dtype)


def _numpy_backward(gates, hs, cs, tcs, grad_out, w_back, dh, dc):
    """The backward's time loop in NumPy calls, as :func:`_native_backward`."""
    t_len, n, four = gates.shape
    hid = four // 4
    dtype = dh.dtype
    block = _block(t_len, n * 4 * hid * dtype.itemsize)
    gt = _feature_major(gates).reshape(t_len, 4, hid, n)
    fac = scratch("factors", (5, block, hid, n), dtype)  # [i, f, g, o, k_c]
    go = scratch("grad_out", (block, hid, n), dtype)
    da = scratch("da", (t_len, 4 * hid, n), dtype)
    da_gates = da.reshape(t_len, 4, hid, n)
    tmp = np.empty((hid, n), dtype)
    for stop in range(t_len, 0, -block):
        start = max(0, stop - block)
        b = stop - start
        f5 = fac[:, :b]
        s = gt[start:stop].transpose(1, 0, 2, 3)  # the activations, gate-major views
        c_prev, t_c, h = cs[start:stop], tcs[start:stop], hs[start:stop]
        # i (1 - i) g, f (1 - f) c_{t-1}, (1 - g^2) i, o (1 - o) tanh(c), o (1 - tanh(c)^2)
        # as (1 - i) ig, .., i - ig g, (1 - o) h, o - h tanh(c)
        ig = np.multiply(s[0], s[2], out=f5[2])
        d = np.subtract(1, s[:2], out=f5[:2])
        d[0] *= ig
        d[1] *= s[1]
        d[1] *= c_prev
        np.subtract(s[0], np.multiply(ig, s[2], out=ig), out=ig)
        np.subtract(1, s[3], out=f5[3])
        f5[3] *= h
        kc = np.subtract(s[3], np.multiply(h, t_c, out=f5[4]), out=f5[4])
        g_b = go[:b]
        np.copyto(g_b, grad_out[start:stop].transpose(0, 2, 1))
        d_b = da_gates[start:stop]
        steps = (g_b, kc, f5[0], f5[1], f5[2], d_b[:, 0], d_b[:, 1], d_b[:, 2], f5[3],
                 d_b[:, 3], s[1], da[start:stop])
        for (g_t, kc_t, f_i, f_f, f_g, da_i, da_f, da_g, f_o, da_o, f_t,
             da_t) in zip(*(v[::-1] for v in steps)):
            dh += g_t
            dc += np.multiply(dh, kc_t, out=tmp)
            np.multiply(f_i, dc, out=da_i)  # (three products: 2.8 us, one over the three
            np.multiply(f_f, dc, out=da_f)  # gates' strided (3, H, N) views: 3.7)
            np.multiply(f_g, dc, out=da_g)
            np.multiply(f_o, dh, out=da_o)
            dc *= f_t
            np.dot(w_back, da_t, out=dh)
    return np.ascontiguousarray(da.transpose(1, 0, 2)).reshape(4 * hid, t_len * n)
