"""conv2d and both gradients as im2col / col2im kernels around the GEMM of :mod:`linalg`.

With CK = C_in/groups * KH * KW and NL = N * H_out * W_out, per group g (as conv1d in
:mod:`fastnn_opencl.conv`):
  forward      out_g (C_out/g, NL)  = W_g (C_out/g, CK) @ cols_g (CK, NL)
  grad_weight  dW_g  (C_out/g, CK)  = G_g (C_out/g, NL) @ colsT_g (NL, CK)
  grad_input   dcols_g (CK, NL)     = W_g^T @ G_g, then col2im gathers dx
The GEMM forward's result is a (N, C_out, H_out, W_out) view of a (C_out, N, H_out, W_out)
buffer; the direct stride-1 kernel of CPU devices writes a contiguous one.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, misc
from fastnn_opencl.conv import PACK_CONV, _zeros
from fastnn_opencl.linalg import (
    PACK_EDGE,
    gemm,
    gemm_nt,
    gemm_packed,
    uses_cpu_kernels,
    vector_lanes,
)
from fastnn_opencl.runtime import CL_TYPES, CLArray

FILE = "conv2d.cl"
_I = np.int32


def _sizes(size, kernel, stride, padding, dilation):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(size, kernel, stride, padding, dilation))


def _geometry(kernel, out_size, stride, padding, dilation):
    (kh, kw), (oh, ow), (sh, sw), ((top, _), (left, _)), (dh, dw) = (
        kernel, out_size, stride, padding, dilation)
    return (kh, kw, oh, ow, sh, sw, top, left, dh, dw)


def _im2col(x: CLArray, kernel, out_size, stride, padding, dilation, transposed: bool):
    dev = x.dev
    n, c, h, w = x.shape
    rows, count = c * kernel[0] * kernel[1], n * out_size[0] * out_size[1]
    cols = dev.empty((count, rows) if transposed else (rows, count), x.dtype)
    rs, cs = (1, rows) if transposed else (count, 1)
    k = dev.kernel(FILE, "k_im2col2d", (("T", CL_TYPES[x.dtype]),), [None, None] + [_I] * 22)
    m = n * out_size[0]
    size = (rows, m) if transposed else (m, rows)
    k(dev.queue, size, None, cols.data, x.data, x.offset, *x.strides, c, h, w,
      *_geometry(kernel, out_size, stride, padding, dilation), rs, cs, m, int(transposed))
    return cols


def _grad_rows(grad_out: CLArray) -> CLArray:
    """grad_out (N, C_out, H_out, W_out) as a contiguous (C_out, N * H_out * W_out) array."""
    n, c_out, oh, ow = grad_out.shape
    s = grad_out.strides
    g = misc.contiguous(grad_out.view((c_out, n, oh, ow), (s[1], s[0], s[2], s[3])))
    return g.view((c_out, n * oh * ow), (n * oh * ow, 1))


@hookimpl
def conv2d(x, weight, stride, padding, dilation, groups):
    weight = misc.contiguous(weight)
    n = x.shape[0]
    c_out, c_in_g, kh, kw = weight.shape
    oh, ow = _sizes(x.shape[2:], (kh, kw), stride, padding, dilation)
    nl, ck, c_out_g = n * oh * ow, c_in_g * kh * kw, c_out // groups
    if _packs_forward(x.dev, x.dtype, c_out_g, ck, c_out_g * ck * nl, ow):
        out = x.dev.empty((n, c_out, oh, ow), x.dtype)
        if out.size:
            _forward_packed(x, weight, out, (weight.offset, (0, ck, 1), (), c_out_g * ck),
                            c_out_g, ck, groups, (kh, kw), stride,
                            (padding[0][0], padding[1][0]), dilation)
        return out
    if tuple(stride) == (1, 1) and uses_cpu_kernels(x.dev):
        # a contiguous (N, C_out, OH, OW) result: the elementwise kernels and reductions
        # after it (BatchNorm, ReLU and their gradients) then read it flat, not strided;
        # weight strides (group, out, in, row, column)
        out = x.dev.empty((n, c_out, oh, ow), x.dtype)
        if out.size:
            _direct(out, (c_out * oh * ow, oh * ow, ow), _unit_width(x), weight,
                    weight.offset, (c_out_g * ck, ck, kh * kw, kw, 1), c_in_g, c_out_g,
                    groups, (oh, ow), (kh, kw), (padding[0][0], padding[1][0]), dilation)
        return out
    out = x.dev.empty((c_out, n, oh, ow), x.dtype)
    if out.size:
        cols = _im2col(x, (kh, kw), (oh, ow), stride, padding, dilation, transposed=False)
        for g in range(groups):
            w_g = weight.view(weight.shape, weight.strides, weight.offset + g * c_out_g * ck)
            cols_g = cols.view(cols.shape, cols.strides, g * ck * nl)
            out_g = out.view(out.shape, out.strides, g * c_out_g * nl)
            gemm(w_g, cols_g, out_g, c_out_g, nl, ck, 1, (0, ck, 1), (0, nl, 1), (0, nl, 1))
    return out.view((n, c_out, oh, ow), (oh * ow, nl, ow, 1))


@hookimpl
def conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    n, c_out, oh, ow = grad_out.shape
    c_in = x.shape[1]
    kh, kw = kernel_size
    c_in_g = c_in // groups
    ck, nl, c_out_g = c_in_g * kh * kw, n * oh * ow, c_out // groups
    grad_w = x.dev.empty((c_out, c_in_g, kh, kw), x.dtype)
    if grad_w.size == 0:
        return grad_w
    if nl == 0:
        return _zeros(grad_w)
    if uses_cpu_kernels(x.dev) and ck >= PACK_EDGE and c_out_g * ck * nl >= PACK_CONV:
        # 1.5x faster than im2col + NT at (32, 16, 32, 32) -> 16, 3x3 (no 19 MB buffer);
        # with ck < 32 (a stem's 1-3 input channels) the panels are mostly padding
        _grad_weight_packed(x, grad_out, grad_w, (kh, kw), (oh, ow), stride, padding,
                            dilation, groups)
        return grad_w
    rows = _grad_rows(grad_out)
    if uses_cpu_kernels(x.dev):
        # dW_g = G_g @ cols_g^T with both read along NL (unit stride): the NT kernel, and
        # the im2col in its cheaper layout (1.2x faster than the transposed cols and NN)
        cols = _im2col(x, (kh, kw), (oh, ow), stride, padding, dilation, transposed=False)
        for g in range(groups):
            g_rows = rows.view(rows.shape, rows.strides, rows.offset + g * c_out_g * nl)
            cols_g = cols.view(cols.shape, cols.strides, g * ck * nl)
            out_g = grad_w.view(grad_w.shape, grad_w.strides, g * c_out_g * ck)
            gemm_nt(g_rows, cols_g, out_g, c_out_g, ck, nl, 1, (0, nl, 1), (0, nl, 1),
                    (0, ck, 1))
        return grad_w
    cols_t = _im2col(x, (kh, kw), (oh, ow), stride, padding, dilation, transposed=True)
    for g in range(groups):
        g_rows = rows.view(rows.shape, rows.strides, rows.offset + g * c_out_g * nl)
        cols_g = cols_t.view(cols_t.shape, cols_t.strides, g * ck)
        out_g = grad_w.view(grad_w.shape, grad_w.strides, g * c_out_g * ck)
        gemm(g_rows, cols_g, out_g, c_out_g, ck, nl, 1, (0, nl, 1), (0, c_in * kh * kw, 1),
             (0, ck, 1))
    return grad_w


def _grad_weight_packed(x, grad_out, grad_w, kernel, out_size, stride, padding, dilation,
                        groups):
    """dW_g = G_g @ cols_g^T through :func:`gemm_packed`: A is grad_out read in place (k
    over (sample, position) pairs), B the transposed im2col packed straight from x."""
    n, c_out, oh, ow = grad_out.shape
    if oh * ow > 1 and grad_out.strides[2] != ow * grad_out.strides[3]:
        grad_out = elementwise.copy(grad_out)  # positions must be one stride apart
    gs = grad_out.strides
    c_in_g, kh, kw = grad_w.shape[1:]
    ck, c_out_g = c_in_g * kh * kw, c_out // groups
    for g in range(groups):
        out_g = grad_w.view(grad_w.shape, grad_w.strides, g * c_out_g * ck)
        g_rows = grad_out.view(grad_out.shape, gs, grad_out.offset + g * c_out_g * gs[1])
        packer = _im2col_packer(x, kernel, out_size, stride, padding, dilation, g * c_in_g,
                                ck, n * oh * ow)
        gemm_packed(g_rows, packer, out_g, c_out_g, ck, n * oh * ow, 1, (0, gs[1], gs[3]),
                    (), (0, ck, 1), a_k2=(oh * ow, gs[0]))


def _packs_forward(dev, dtype: str, rows: int, ck: int, macs: int, ow: int) -> bool:
    """Whether a conv (or a stride-1 input gradient) of ``rows`` output channels per group,
    ``ow`` wide, takes :func:`_forward_packed` on a CPU device rather than
    ``k_conv2d_direct``. The packing pass costs the same whatever the rows, so it pays from
    32 of them; and on narrow images (ow below two of the direct kernel's vectors, which
    then run partly empty along the width) the packed GEMM measured 1.35-1.5x faster (14 x
    14 -> 32 and 7 x 7 -> 64 channels; PoCL 3.0, AVX-512), on 16-32 wide ones the direct
    kernel won up to 3x, and with 16 rows it won on 14 x 14 too (4.5 against 6.0 ms)."""
    return (uses_cpu_kernels(dev) and rows >= PACK_EDGE and ck >= PACK_EDGE
            and macs >= PACK_CONV and ow < 2 * vector_lanes(dev, dtype))


def _forward_packed(x, weight, out, a_view: tuple, rows: int, ck: int, groups: int, kernel,
                    stride, lead: tuple, dilation) -> None:
    """out[n]_g (rows, OH * OW) = A_g (rows, ck) @ im2col(x[n])_g through :func:`gemm_packed`,
    one batch entry per sample. A is read from the weight in place: ``a_view`` = (offset,
    (0, row stride, k stride), a_k2 (as gemm_packed's, or ()), offset step between
    groups). B is each sample's im2col of x packed straight from x (``k_pack_b_im2col2d_fwd``,
    group g from input channel g * C_x/groups on, ``lead`` = (top, left) padding), C the
    contiguous (N, C_out, OH, OW) ``out``; ``kernel`` = (KH, KW)."""
    n, c_out, oh, ow = out.shape
    q = oh * ow
    offset, a_strides, a_k2, group_step = a_view
    c_x_g = x.shape[1] // groups
    dev = x.dev
    for g in range(groups):
        a_g = weight.view(weight.shape, weight.strides, offset + g * group_step)
        out_g = out.view(out.shape, out.strides, g * rows * q)

        def pack(defines, panels, bp, c0=g * c_x_g):
            kernel_ = dev.kernel("matmul.cl", "k_pack_b_im2col2d_fwd", defines,
                                 [_I, _I, None] + [_I] * 17 + [None])
            kernel_(dev.queue, (-(-ck // 8), panels, n), None, ck, q, x.data, x.offset,
                    *x.strides, x.shape[2], x.shape[3], ow, *kernel, *stride, *lead,
                    *dilation, c0, bp.data)

        gemm_packed(a_g, pack, out_g, rows, q, ck, n, a_strides, (), (c_out * q, q, 1),
                    a_k2=a_k2)


def _im2col_packer(x, kernel, out_size, stride, padding, dilation, c0, ck, nl):
    """A packer for :func:`gemm_packed`: B = the transposed im2col of x (nl x ck), columns
    from input channel c0 on, written into the packed panels (``k_pack_b_im2col2d``)."""
    def pack(defines, panels, bp):
        dev = x.dev
        kernel_ = dev.kernel("matmul.cl", "k_pack_b_im2col2d", defines,
                             [_I, _I, None] + [_I] * 18 + [None])
        kernel_(dev.queue, (-(-nl // 8), panels), None, nl, ck, x.data, x.offset, *x.strides,
                x.shape[2], x.shape[3], *out_size, *kernel, *stride, padding[0][0],
                padding[1][0], *dilation, c0, bp.data)
    return pack


@hookimpl
def conv2d_grad_input(grad_out, weight, input_size, stride, padding, dilation, groups):
    weight = misc.contiguous(weight)
    n, c_out, oh, ow = grad_out.shape
    _, c_in_g, kh, kw = weight.shape
    c_in, ck, nl, c_out_g = c_in_g * groups, c_in_g * kh * kw, n * oh * ow, c_out // groups
    dev = grad_out.dev
    h, w = input_size
    dx = dev.empty((n, c_in, h, w), grad_out.dtype)
    if dx.size == 0:
        return dx
    if nl == 0:
        return _zeros(dx)
    (top, _), (left, _) = padding
    (dh, dw) = dilation
    lead = (dh * (kh - 1) - top, dw * (kw - 1) - left)
    taps = kh * kw
    if tuple(stride) == (1, 1) and _packs_forward(dev, dx.dtype, c_in_g, c_out_g * taps,
                                                  c_in_g * c_out_g * taps * n * h * w, w):
        # the same stride-1 convolution as below through the packed GEMM: A[ci, (co, a,
        # b)] = weight[co, ci, KH-1-a, KW-1-b], k over (co, tap) as two axes of A
        _forward_packed(_unit_width(grad_out), weight, dx,
                        (weight.offset + taps - 1, (0, taps, -1), (taps, ck), c_out_g * ck),
                        c_in_g, c_out_g * taps, groups, (kh, kw), (1, 1), lead, dilation)
        return dx
    if tuple(stride) == (1, 1) and uses_cpu_kernels(dev):
        # dx is the stride-1 convolution of grad_out with the transposed, flipped weight,
        # padded by d*(k-1) - p on the leading side (the same sum as col2im's)
        _direct(dx, (c_in * h * w, h * w, w), _unit_width(grad_out), weight,
                weight.offset + (kh - 1) * kw + kw - 1, (c_out_g * ck, kh * kw, ck, -kw, -1),
                c_out_g, c_in_g, groups, (h, w), (kh, kw), lead, dilation)
        return dx
    rows = _grad_rows(grad_out)
    dcols = dev.empty((c_in * kh * kw, nl), grad_out.dtype)
    for g in range(groups):
        w_t = weight.view(weight.shape, weight.strides, weight.offset + g * c_out_g * ck)
        g_rows = rows.view(rows.shape, rows.strides, rows.offset + g * c_out_g * nl)
        out_g = dcols.view(dcols.shape, dcols.strides, g * ck * nl)
        gemm(w_t, g_rows, out_g, ck, nl, c_out_g, 1, (0, 1, ck), (0, nl, 1), (0, nl, 1))
    kernel = dev.kernel(FILE, "k_col2im2d", (("T", CL_TYPES[dx.dtype]),),
                        [None, None] + [_I] * 14)
    kernel(dev.queue, (n * c_in * h,), None, dx.data, dcols.data, n, c_in, h, w,
           *_geometry((kh, kw), (oh, ow), stride, padding, dilation))
    return dx


def _unit_width(x: CLArray) -> CLArray:
    """x (N, C, H, W) with unit stride along W (a copy only if it is not)."""
    return x if x.shape[3] <= 1 or x.strides[3] == 1 else elementwise.copy(x)


def _direct(out: CLArray, out_strides: tuple, x: CLArray, weight: CLArray, w_offset: int,
            w_strides: tuple, c_in_g: int, c_out_g: int, groups: int, out_size: tuple,
            kernel_size: tuple, lead_padding: tuple, dilation: tuple) -> None:
    """The stride-1 direct convolution of ``k_conv2d_direct`` into ``out``.

    out_strides = (sample, channel, row) strides of out (unit along its width); w_strides =
    (group, output channel, input channel, kernel row, kernel column) element strides.
    """
    dev = x.dev
    vw = vector_lanes(dev, x.dtype)  # 32 bytes at most (see linalg.vector_lanes)
    tc = 8
    defines = (("T", CL_TYPES[x.dtype]), ("TC", tc), ("VW", vw))
    kernel = dev.kernel(FILE, "k_conv2d_direct", defines,
                        [None, _I, _I, _I, None, _I, _I, _I, _I, None] + [_I] * 18)
    n, _, h, w = x.shape
    oh, ow = out_size
    size = (-(-ow // vw), n * oh, groups * -(-c_out_g // tc))
    kernel(dev.queue, size, None, out.data, *out_strides, x.data, x.offset, x.strides[0],
           x.strides[1], x.strides[2], weight.data, w_offset, *w_strides, c_in_g, c_out_g,
           h, w, oh, ow, *kernel_size, *lead_padding, *dilation)
