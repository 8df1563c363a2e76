"""conv1d and both gradients as im2col / col2im kernels around the GEMM of :mod:`linalg`.

With CK = C_in/groups * K and NL = N * L_out, per group g:
  forward      out_g (C_out/g, NL)  = W_g (C_out/g, CK) @ cols_g (CK, NL)
  grad_weight  dW_g  (C_out/g, CK)  = G_g (C_out/g, NL) @ colsT_g (NL, CK)
  grad_input   dcols_g (CK, NL)     = W_g^T @ G_g, then col2im gathers dx
where G is grad_out laid out as (C_out, N, L_out). The GEMM forward's result is
returned as a (N, C_out, L_out) view of the (C_out, N, L_out) buffer, so its
gradient usually arrives already in G's layout and needs no copy.

On CPU devices stride 1 takes direct kernels, with no im2col buffer: the forward writes
a contiguous (N, C_out, L_out) result (elementwise kernels and reductions after it then
see a contiguous array), the input gradient is the same kernel over the flipped weight,
and the weight gradient sums products along the positions (``k_conv1d_grad_weight``). A
strided weight gradient there is a packed GEMM that reads x and grad_out in place.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, misc
from fastnn_opencl.linalg import gemm, gemm_packed, uses_cpu_kernels, vector_lanes
from fastnn_opencl.misc import fill
from fastnn_opencl.runtime import CL_TYPES, CLArray, rounded

FILE = "conv.cl"
PACK_CONV = 1 << 18  # weight gradients of this many multiply-adds: the packed GEMM on CPUs
_I = np.int32


def _length_out(length, kernel_size, stride, padding, dilation):
    return (length + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1



def _im2col(x: CLArray, k: int, length_out: int, stride, padding, dilation, transposed: bool):
    dev = x.dev
    n, c, length = x.shape
    rows, cols_count = c * k, n * length_out
    shape = (cols_count, rows) if transposed else (rows, cols_count)
    cols = dev.empty(shape, x.dtype)
    rs, cs = (1, rows) if transposed else (cols_count, 1)
    kernel = dev.kernel(FILE, "k_im2col", (("T", CL_TYPES[x.dtype]),),
                        [None, None] + [_I] * 14)
    kernel(dev.queue, (rounded(length_out, 16), n, rows), None, cols.data, x.data, x.offset,
           *x.strides, n, c, length, k, length_out, stride, padding, dilation, rs, cs)
    return cols


def _grad_rows(grad_out: CLArray) -> CLArray:
    """grad_out (N, C_out, L_out) as a contiguous (C_out, N * L_out) array."""
    n, c_out, length_out = grad_out.shape
    g = grad_out.view((c_out, n, length_out), (grad_out.strides[1], grad_out.strides[0],
                                               grad_out.strides[2]))
    g = misc.contiguous(g)
    return g.view((c_out, n * length_out), (n * length_out, 1))


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    weight = misc.contiguous(weight)
    n = x.shape[0]
    c_out, c_in_g, k = weight.shape
    length_out = _length_out(x.shape[2], k, stride, padding, dilation)
    nl, ck, c_out_g = n * length_out, c_in_g * k, c_out // groups
    if stride == 1 and uses_cpu_kernels(x.dev):  # (N, C_out, L_out), contiguous
        out = x.dev.empty((n, c_out, length_out), x.dtype)
        if out.size:
            w_strides = (c_out_g * ck, ck, k, 1)  # (group, out channel, in channel, tap)
            _direct(out, (c_out * length_out, length_out), _unit_length(x), weight,
                    weight.offset, w_strides, c_in_g, c_out_g, groups, length_out, k, padding,
                    dilation)
        return out
    out = x.dev.empty((c_out, n, length_out), x.dtype)
    if out.size:
        cols = _im2col(x, k, length_out, stride, padding, dilation, transposed=False)
        for g in range(groups):
            w_g = weight.view(weight.shape, weight.strides, weight.offset + g * c_out_g * ck)
            cols_g = cols.view(cols.shape, cols.strides, g * ck * nl)
            out_g = out.view(out.shape, out.strides, g * c_out_g * nl)
            gemm(w_g, cols_g, out_g, c_out_g, nl, ck, 1, (0, ck, 1), (0, nl, 1), (0, nl, 1))
    return out.view((n, c_out, length_out), (length_out, nl, 1))


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    n, c_out, length_out = grad_out.shape
    c_in = x.shape[1]
    c_in_g, k = c_in // groups, kernel_size
    ck, nl, c_out_g = c_in_g * k, n * length_out, c_out // groups
    grad_w = x.dev.empty((c_out, c_in_g, k), x.dtype)
    if grad_w.size == 0:
        return grad_w
    if nl == 0:
        return _zeros(grad_w)
    if stride == 1 and uses_cpu_kernels(x.dev):
        _grad_weight_direct(grad_w, _unit_length(x), _unit_length(grad_out), groups, padding,
                            dilation)
        return grad_w
    if uses_cpu_kernels(x.dev) and c_out_g * ck * nl >= PACK_CONV:  # B from x, A in place
        gs = grad_out.strides
        for g in range(groups):
            out_g = grad_w.view(grad_w.shape, grad_w.strides, g * c_out_g * ck)
            g_rows = grad_out.view(grad_out.shape, gs, grad_out.offset + g * c_out_g * gs[1])
            packer = _im2col_packer(x, k, length_out, stride, padding, dilation, g * c_in_g,
                                    ck, nl)
            gemm_packed(g_rows, packer, out_g, c_out_g, ck, nl, 1, (0, gs[1], gs[2]), (),
                        (0, ck, 1), a_k2=(length_out, gs[0]))
        return grad_w
    cols_t = _im2col(x, k, length_out, stride, padding, dilation, transposed=True)
    rows = _grad_rows(grad_out)
    for g in range(groups):
        g_rows = rows.view(rows.shape, rows.strides, rows.offset + g * c_out_g * nl)
        cols_g = cols_t.view(cols_t.shape, cols_t.strides, g * ck)
        out_g = grad_w.view(grad_w.shape, grad_w.strides, g * c_out_g * ck)
        gemm(g_rows, cols_g, out_g, c_out_g, ck, nl, 1, (0, nl, 1), (0, c_in * k, 1), (0, ck, 1))
    return grad_w


def _im2col_packer(x: CLArray, k: int, length_out: int, stride: int, padding: int,
                   dilation: int, c0: int, ck: int, nl: int):
    """A packer for :func:`gemm_packed`: B = the transposed im2col of x (nl x ck), columns
    from input channel c0 on, written into the packed panels with no im2col buffer."""
    def pack(defines, panels, bp):
        dev = x.dev
        kernel = dev.kernel("matmul.cl", "k_pack_b_im2col", defines,
                            [_I, _I, None] + [_I] * 11 + [None])
        kernel(dev.queue, (-(-nl // 8), panels), None, nl, ck, x.data, x.offset, *x.strides,
               x.shape[2], length_out, k, stride, padding, dilation, c0, bp.data)
    return pack


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    weight = misc.contiguous(weight)
    n, c_out, length_out = grad_out.shape
    _, c_in_g, k = weight.shape
    c_in, ck, nl, c_out_g = c_in_g * groups, c_in_g * k, n * length_out, c_out // groups
    dev = grad_out.dev
    dx = dev.empty((n, c_in, input_length), grad_out.dtype)
    if dx.size == 0:
        return dx
    if nl == 0:
        return _zeros(dx)
    if stride == 1 and uses_cpu_kernels(dev):
        # dx is the stride-1 convolution of grad_out with the transposed, flipped weight:
        # dx[n, ci, t] = sum_{co, j} w[co, ci, K-1-j] * g[n, co, t + j*dilation - p'] with
        # p' = dilation*(K-1) - padding (the same sum as col2im's, indexed the other way)
        w_strides = (c_out_g * ck, k, ck, -1)  # (group, in channel, out channel, flipped tap)
        _direct(dx, (c_in * input_length, input_length), _unit_length(grad_out), weight,
                weight.offset + k - 1, w_strides, c_out_g, c_in_g, groups, input_length, k,
                dilation * (k - 1) - padding, dilation)
        return dx
    rows = _grad_rows(grad_out)
    dcols = dev.empty((c_in * k, nl), grad_out.dtype)
    for g in range(groups):
        w_t = weight.view(weight.shape, weight.strides, weight.offset + g * c_out_g * ck)
        g_rows = rows.view(rows.shape, rows.strides, rows.offset + g * c_out_g * nl)
        out_g = dcols.view(dcols.shape, dcols.strides, g * ck * nl)
        gemm(w_t, g_rows, out_g, ck, nl, c_out_g, 1, (0, 1, ck), (0, nl, 1), (0, nl, 1))
    kernel = dev.kernel(FILE, "k_col2im", (("T", CL_TYPES[dx.dtype]),), [None, None] + [_I] * 8)
    kernel(dev.queue, (rounded(dx.size),), None, dx.data, dcols.data, n, c_in, input_length, k,
           length_out, stride, padding, dilation)
    return dx


def _unit_length(x: CLArray) -> CLArray:
    """x (N, C, L) with unit stride along L (a copy only if it is not)."""
    return x if x.shape[2] <= 1 or x.strides[2] == 1 else elementwise.copy(x)


def _direct_kernel(dev, dtype: str, name: str, arg_dtypes: list):
    """``name`` of the direct CPU kernels: one program per dtype holds all of them."""
    vw = vector_lanes(dev, dtype)  # 32 bytes at most (see linalg.vector_lanes)
    defines = (("T", CL_TYPES[dtype]), ("VW", vw), ("TC", TC), ("VN", VN), ("TO", TO),
               ("TJ", TJ))
    return dev.kernel(FILE, name, defines, arg_dtypes), vw


TC, VN = 4, 2  # k_conv1d_direct: output channels x position vectors per work-item
TO, TJ = 4, 4  # k_conv1d_grad_weight: output channels x (channel, tap) columns per work-item


def _direct(out: CLArray, out_strides: tuple, x: CLArray, weight: CLArray, w_offset: int,
            w_strides: tuple, c_in_g: int, c_out_g: int, groups: int, length_out: int, k: int,
            padding: int, dilation: int) -> None:
    """The stride-1 direct convolution of ``k_conv1d_direct`` into ``out``.

    out_strides = (sample, channel) strides of out (unit along the length);
    w_strides = (group, output channel, input channel, tap) element strides of weight.
    """
    dev = x.dev
    kernel, vw = _direct_kernel(dev, x.dtype, "k_conv1d_direct",
                                [None, _I, _I, None, _I, _I, _I, None] + [_I] * 12)
    n, _, length = x.shape
    size = (-(-length_out // (vw * VN)), n, groups * -(-c_out_g // TC))
    kernel(dev.queue, size, None, out.data, *out_strides, x.data, x.offset, x.strides[0],
           x.strides[1], weight.data, w_offset, *w_strides, c_in_g, c_out_g, length,
           length_out, k, padding, dilation)


SPLIT_ITEMS = 4  # work-items per compute unit below which the weight gradient splits


def _grad_weight_direct(grad_w: CLArray, x: CLArray, grad_out: CLArray, groups: int,
                        padding: int, dilation: int) -> None:
    """The stride-1 weight gradient of ``k_conv1d_grad_weight`` into (contiguous) grad_w.

    With few output blocks for the device's compute units, the (sample, position vector)
    pairs are split and the partial products summed (``k_sum_slices``)."""
    dev = x.dev
    c_out, c_in_g, k = grad_w.shape
    n, _, length = x.shape
    length_out = grad_out.shape[2]
    c_out_g, ck = c_out // groups, c_in_g * k
    kernel, vw = _direct_kernel(dev, x.dtype, "k_conv1d_grad_weight",
                                [None, None, _I, _I, _I, None] + [_I] * 13)
    pairs = n * -(-length_out // vw)
    items = -(-ck // TJ) * groups * -(-c_out_g // TO)
    splits = max(1, min(-(-SPLIT_ITEMS * dev.compute_units // items), pairs // 16))
    per_split = -(-pairs // splits)
    splits = -(-pairs // per_split)
    parts = grad_w if splits == 1 else dev.empty((splits,) + grad_w.shape, grad_w.dtype)
    kernel(dev.queue, (-(-ck // TJ), groups * -(-c_out_g // TO), splits), None, parts.data,
           x.data, x.offset, x.strides[0], x.strides[1], grad_out.data, grad_out.offset,
           grad_out.strides[0], grad_out.strides[1], c_in_g, c_out_g, groups, length,
           length_out, k, padding, dilation, pairs, per_split)
    if splits > 1:
        total, _ = _direct_kernel(dev, x.dtype, "k_sum_slices", [None, None, _I, _I])
        total(dev.queue, (rounded(grad_w.size),), None, grad_w.data, parts.data, grad_w.size,
              splits)


def _zeros(like: CLArray) -> CLArray:
    return fill(like.shape, 0, like.dtype, like.dev)
