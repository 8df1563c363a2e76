"""conv2d and its two gradients as im2col + one cuBLAS GEMM per group (as conv1d in
:mod:`fastnn_cuda.conv`).

The column matrix is (C_in, KH, KW, N, H_out, W_out), viewed as (groups, C_in/groups *
KH * KW, N * H_out * W_out); im2col2d reads x through its strides with the zero padding
done by bounds checks, col2im2d gathers each input element's taps (no atomics). float16
and other dtypes without a kernel use a padded copy, strided views and adds instead.
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.conv import _gemm


def out_size(size, kernel, stride, padding, dilation):
    """(H_out, W_out) of a conv2d with per-side ``padding``."""
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(size, kernel, stride, padding, dilation))


def _geometry(kernel, size_out, stride, padding, dilation):
    ((top, _), (left, _)) = padding
    return (*kernel, *size_out, *stride, top, left, *dilation)


def _padded(x, padding):
    (top, bottom), (left, right) = padding
    n, c, h, w = x.shape
    xp = cp.zeros((n, c, h + top + bottom, w + left + right), dtype=x.dtype)
    xp[:, :, top : top + h, left : left + w] = x
    return xp


def columns(x, kernel, stride, padding, dilation, groups, size_out):
    """im2col: (groups, C_in/groups * KH * KW, N * H_out * W_out), a fresh contiguous array."""
    n, c = x.shape[:2]
    (kh, kw), (oh, ow) = kernel, size_out
    if kernels.has_kernel(x.dtype):
        cols = cp.empty((c, kh, kw, n, oh, ow), dtype=x.dtype)
        s_n, s_c, s_h, s_w = (s // x.itemsize for s in x.strides)
        args = (x, cols, n, c, *x.shape[2:], s_n, s_c, s_h, s_w,
                *_geometry(kernel, size_out, stride, padding, dilation))
        kernels.launch_planes("im2col2d", x.dtype, x.device.id, ow, n * oh, c * kh * kw, args)
    else:
        xp = _padded(x, padding)
        s_n, s_c, s_h, s_w = xp.strides
        (sh, sw), (dh, dw) = stride, dilation
        windows = cp.lib.stride_tricks.as_strided(
            xp, shape=(c, kh, kw, n, oh, ow),
            strides=(s_c, dh * s_h, dw * s_w, s_n, sh * s_h, sw * s_w))
        cols = cp.ascontiguousarray(windows)
    return cols.reshape(groups, (c // groups) * kh * kw, n * oh * ow)


def _grad_out_rows(grad_out, groups):
    n, c_out, oh, ow = grad_out.shape
    rows = cp.ascontiguousarray(grad_out.transpose(1, 0, 2, 3))
    return rows.reshape(groups, c_out // groups, n * oh * ow)


@hookimpl
def conv2d(x, weight, stride, padding, dilation, groups):
    n = x.shape[0]
    c_out, c_in_g, kh, kw = weight.shape
    oh, ow = out_size(x.shape[2:], (kh, kw), stride, padding, dilation)
    cols = columns(x, (kh, kw), stride, padding, dilation, groups, (oh, ow))
    w = weight.reshape(groups, c_out // groups, c_in_g * kh * kw)
    out = _gemm(w, cols)  # (groups, C_out/groups, N * H_out * W_out)
    return out.reshape(c_out, n, oh, ow).transpose(1, 0, 2, 3)


@hookimpl
def conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out, oh, ow = grad_out.shape[1:]
    cols = columns(x, tuple(kernel_size), stride, padding, dilation, groups, (oh, ow))
    grad_w = _gemm(_grad_out_rows(grad_out, groups), cols.transpose(0, 2, 1))
    return grad_w.reshape(c_out, x.shape[1] // groups, *kernel_size)


def _col2im_fallback(dcols, n, input_size, size_out, stride, padding, dilation):
    c_in, kh, kw = dcols.shape[:3]
    (top, bottom), (left, right) = padding
    h, w = input_size
    (oh, ow), (sh, sw), (dh, dw) = size_out, stride, dilation
    dxp = cp.zeros((c_in, n, h + top + bottom, w + left + right), dtype=dcols.dtype)
    for a in range(kh):
        for b in range(kw):
            dxp[:, :, a * dh : a * dh + sh * (oh - 1) + 1 : sh,
                b * dw : b * dw + sw * (ow - 1) + 1 : sw] += dcols[:, a, b]
    return cp.ascontiguousarray(dxp[:, :, top : top + h, left : left + w].transpose(1, 0, 2, 3))


@hookimpl
def conv2d_grad_input(grad_out, weight, input_size, stride, padding, dilation, groups):
    n, c_out, oh, ow = grad_out.shape
    _, c_in_g, kh, kw = weight.shape
    c_in = c_in_g * groups
    w = weight.reshape(groups, c_out // groups, c_in_g * kh * kw)
    dcols = _gemm(w.transpose(0, 2, 1), _grad_out_rows(grad_out, groups))
    dcols = cp.ascontiguousarray(dcols).reshape(c_in, kh, kw, n, oh, ow)
    if not kernels.has_kernel(grad_out.dtype):
        return _col2im_fallback(dcols, n, input_size, (oh, ow), stride, padding, dilation)
    h, w_ = input_size
    dx = cp.empty((n, c_in, h, w_), dtype=grad_out.dtype)
    args = (dcols, dx, n, c_in, h, w_, *_geometry((kh, kw), (oh, ow), stride, padding,
                                                  dilation))
    kernels.launch_planes("col2im2d", dx.dtype, dx.device.id, w_, n * h, c_in, args)
    return dx


@hookimpl
def conv2d_backward(x, weight, grad_out, stride, padding, dilation, groups):
    # nothing shared between the two gradients' kernels: the core's composite, with
    # this module's two hooks
    attrs = (stride, padding, dilation, groups)
    return (conv2d_grad_input(grad_out, weight, tuple(x.shape[2:]), *attrs),
            conv2d_grad_weight(x, grad_out, tuple(weight.shape[2:]), *attrs))
