"""The pooling, batch-norm and recurrent-layer hooks on cupy arrays, as kernels of
``cu/layers.cu``.

- max pooling: one launch forward (one thread per output, x read through its strides);
  backward two: the position each window's gradient goes to (PyTorch's index: the first
  equal to the max, the last NaN of a NaN window), then each input gathers the gradients
  of the windows that picked it (no atomics, deterministic);
- batch norm: one launch forward and one backward, a block per channel (sums in double);
- LSTM/GRU layers: the input projection of all steps is one GEMM; each step is one GEMM
  (cuBLAS, through cupy) and one fused cell kernel, forward and backward; the weight
  gradients are one GEMM each over all steps. cuDNN's RNN is not used: its cupy binding
  needs a GPU to be tested, these kernels run on the host stand-ins.

float32/float64 take the kernels; other dtypes go through the core's composites
(fastnn.api.composite_pool, composite_norm, composite_recurrent) over this backend's hooks.
"""

from __future__ import annotations

import math

from fastnn.api import composite_norm, composite_pool, composite_recurrent
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import gemm, kernels
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.fused import _own_hooks
from fastnn_cuda.norm_act import in_float32


def _kernel_dtype(*arrays) -> bool:
    dtype = arrays[0].dtype
    return kernels.has_kernel(dtype) and all(a.dtype == dtype for a in arrays)


def _strides(a) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def _geometry(x_shape, out_shape, kernel, stride, padding, dilation) -> tuple:
    return (x_shape[1], x_shape[2], x_shape[3], out_shape[2], out_shape[3], *kernel, *stride,
            *padding, *dilation)


# ---------------------------------------------------------------- pooling


@hookimpl
def max_pool2d(x, kernel, stride, padding, dilation, output_size):
    if not _kernel_dtype(x):
        return composite_pool.max_pool2d(_own_hooks(), x, kernel, stride, padding, dilation,
                                         output_size)
    shape = tuple(x.shape[:2]) + tuple(output_size)
    out = cp.empty(shape, dtype=x.dtype)
    total = math.prod(shape)
    geometry = _geometry(x.shape, shape, kernel, stride, padding, dilation)
    kernels.launch_flat("max_pool2d_forward", x.dtype, x.device.id, total,
                        (x, out, *geometry, *_strides(x), total))
    return out


@hookimpl
def max_pool2d_backward(x, out, grad, kernel, stride, padding, dilation):
    if not _kernel_dtype(x, out, grad):
        return composite_pool.max_pool2d_backward(_own_hooks(), x, out, grad, kernel, stride,
                                                  padding, dilation)
    share = cp.empty(out.shape, dtype=x.dtype)
    pick = cp.empty(out.shape, dtype=cp.int64)
    dx = cp.empty(x.shape, dtype=x.dtype)
    geometry = _geometry(x.shape, out.shape, kernel, stride, padding, dilation)
    device = x.device.id
    kernels.launch_flat("max_pool2d_share", x.dtype, device, out.size,
                        (x, grad, share, pick, *geometry, *_strides(x), *_strides(grad),
                         out.size))
    kernels.launch_flat("max_pool2d_backward", x.dtype, device, x.size,
                        (share, pick, dx, *geometry, x.size))
    return dx


# ---------------------------------------------------------------- batch normalisation


def _channels(x) -> tuple[int, int, int]:
    n, c = x.shape[:2]
    return n, c, math.prod(x.shape[2:])


@hookimpl
def batch_norm_train(x, weight, bias, eps):
    if x.dtype == cp.float16:  # a channel's mean and variance in float32, as PyTorch
        return in_float32(lambda *a: batch_norm_train(*a, eps), x, weight, bias)
    if not _kernel_dtype(x, weight, bias):
        return composite_norm.batch_norm_train(_own_hooks(), x, weight, bias, eps)
    x = cp.ascontiguousarray(x)
    n, c, s = _channels(x)
    out = cp.empty(x.shape, dtype=x.dtype)
    mean, var = cp.empty((c,), dtype=x.dtype), cp.empty((c,), dtype=x.dtype)
    kernels.launch_channels("batch_norm_forward", x.dtype, x.device.id, c,
                            (x, cp.ascontiguousarray(weight), cp.ascontiguousarray(bias), out,
                             mean, var, n, c, s, float(eps)))
    return out, mean, var


@hookimpl
def batch_norm_backward(x, weight, mean, var, grad, eps):
    if not _kernel_dtype(x, weight, mean, var, grad):
        return composite_norm.batch_norm_backward(_own_hooks(), x, weight, mean, var, grad,
                                                  eps)
    x, grad = cp.ascontiguousarray(x), cp.ascontiguousarray(grad)
    n, c, s = _channels(x)
    dx = cp.empty(x.shape, dtype=x.dtype)
    dweight, dbias = cp.empty((c,), dtype=x.dtype), cp.empty((c,), dtype=x.dtype)
    kernels.launch_channels("batch_norm_backward", x.dtype, x.device.id, c,
                            (x, cp.ascontiguousarray(weight), cp.ascontiguousarray(mean),
                             cp.ascontiguousarray(var), grad, dx, dweight, dbias, n, c, s,
                             float(eps)))
    return dx, dweight, dbias


# ---------------------------------------------------------------- recurrent layers


def _projection(x, w, bias):
    """(T, N, G): x (T, N, I) @ w^T + bias, one GEMM for every step."""
    t_len, n, size = x.shape
    flat = gemm.matmul(cp, x.reshape(t_len * n, size), w.T)
    flat += bias
    return flat.reshape(t_len, n, w.shape[0])


def _previous(h0, out):
    """(T * N, H): the state each step started from (h0, then out[:-1])."""
    t_len, n, hid = out.shape
    return cp.concatenate([h0.reshape(1, n, hid), out[:-1]], 0).reshape(t_len * n, hid)


def _weight_grads(d, inputs, w, shape):
    """(d input as ``shape``, or None where not ``shape``; d w; d bias)."""
    d_in = None if shape is None else gemm.matmul(cp, d, w).reshape(shape)
    return d_in, gemm.matmul(cp, d.T, inputs), d.sum(axis=0)


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    if not _kernel_dtype(x, h0, c0, w_ih, w_hh, bias) or 0 in x.shape or 0 in h0.shape:
        return composite_recurrent.lstm_layer(_own_hooks(), x, h0, c0, w_ih, w_hh, bias)
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    xp = _projection(x, w_ih, bias)
    out = cp.empty((t_len, n, hid), dtype=x.dtype)
    gates = cp.empty((t_len, n, 4 * hid), dtype=x.dtype)
    cells = cp.empty((t_len, n, hid), dtype=x.dtype)
    w_t, device = w_hh.T, x.device.id
    h, c = cp.ascontiguousarray(h0), cp.ascontiguousarray(c0)
    for t in range(t_len):
        hh = gemm.matmul(cp, h, w_t)
        kernels.launch_flat("lstm_cell_forward", x.dtype, device, n * hid,
                            (xp[t], hh, c, gates[t], cells[t], out[t], n, hid))
        h, c = out[t], cells[t]
    return out, gates, cells


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                        needs_dx):
    arrays = (x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c)
    if not _kernel_dtype(*arrays) or 0 in x.shape or 0 in h0.shape:
        return composite_recurrent.lstm_layer_backward(_own_hooks(), *arrays, needs_dx)
    t_len, n, size = x.shape
    hid = h0.shape[1]
    gates, cells = cp.ascontiguousarray(gates), cp.ascontiguousarray(cells)
    grad_out = cp.ascontiguousarray(grad_out)
    c0 = cp.ascontiguousarray(c0)
    dc = cp.array(grad_c, dtype=x.dtype, order="C")  # a copy: rewritten in place per step
    da = cp.empty((t_len, n, 4 * hid), dtype=x.dtype)
    device, rec = x.device.id, 0
    for t in reversed(range(t_len)):
        c_prev = cells[t - 1] if t else c0
        kernels.launch_flat("lstm_cell_backward", x.dtype, device, n * hid,
                            (grad_out[t], rec, gates[t], cells[t], c_prev, dc, da[t], n, hid))
        rec = gemm.matmul(cp, da[t], w_hh)
    flat = da.reshape(t_len * n, 4 * hid)
    dx, dw_ih, dbias = _weight_grads(flat, cp.ascontiguousarray(x).reshape(t_len * n, size),
                                     w_ih, x.shape if needs_dx else None)
    dw_hh = gemm.matmul(cp, flat.T, _previous(h0, out))
    return dx, rec, dc, dw_ih, dw_hh, dbias


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    if not _kernel_dtype(x, h0, w_ih, w_hh, b_ih, b_hh) or 0 in x.shape or 0 in h0.shape:
        return composite_recurrent.gru_layer(_own_hooks(), x, h0, w_ih, w_hh, b_ih, b_hh)
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    xp = _projection(x, w_ih, b_ih)
    out = cp.empty((t_len, n, hid), dtype=x.dtype)
    saved = cp.empty((t_len, n, 4 * hid), dtype=x.dtype)
    w_t, b_hh, device = w_hh.T, cp.ascontiguousarray(b_hh), x.device.id
    h = cp.ascontiguousarray(h0)
    for t in range(t_len):
        q = gemm.matmul(cp, h, w_t)
        kernels.launch_flat("gru_cell_forward", x.dtype, device, n * hid,
                            (xp[t], q, b_hh, h, saved[t], out[t], n, hid))
        h = out[t]
    return out, saved


@hookimpl
def gru_layer_backward(x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx):
    arrays = (x, h0, w_ih, w_hh, out, saved, grad_out)
    if not _kernel_dtype(*arrays) or 0 in x.shape or 0 in h0.shape:
        return composite_recurrent.gru_layer_backward(_own_hooks(), *arrays, needs_dx)
    t_len, n, size = x.shape
    hid = h0.shape[1]
    saved, grad_out = cp.ascontiguousarray(saved), cp.ascontiguousarray(grad_out)
    h0c = cp.ascontiguousarray(h0)
    dp = cp.empty((t_len, n, 3 * hid), dtype=x.dtype)
    dq = cp.empty((t_len, n, 3 * hid), dtype=x.dtype)
    carry = cp.empty((n, hid), dtype=x.dtype)
    device, rec = x.device.id, 0
    for t in reversed(range(t_len)):
        h_prev = out[t - 1] if t else h0c
        kernels.launch_flat("gru_cell_backward", x.dtype, device, n * hid,
                            (grad_out[t], carry, rec, saved[t], h_prev, dp[t], dq[t], n, hid))
        rec = gemm.matmul(cp, dq[t], w_hh)
    dh0 = carry + rec
    flat_p, flat_q = dp.reshape(t_len * n, 3 * hid), dq.reshape(t_len * n, 3 * hid)
    dx, dw_ih, db_ih = _weight_grads(flat_p, cp.ascontiguousarray(x).reshape(t_len * n, size),
                                     w_ih, x.shape if needs_dx else None)
    dw_hh = gemm.matmul(cp, flat_q.T, _previous(h0, out))
    return dx, dh0, dw_ih, dw_hh, db_ih, flat_q.sum(axis=0)
