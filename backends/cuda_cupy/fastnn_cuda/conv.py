"""conv1d and its two gradients as im2col + one cuBLAS GEMM per group.

Same layout as the NumPy backend (``fastnn_cpu/conv.py``): the column matrix
is (C_in, K, N, L_out), viewed as (groups, C_in/groups * K, N * L_out), so one
GEMM covers the whole batch. With ``groups == 1`` every product is 2-D, where
cupy passes transposed views to cuBLAS as GEMM flags instead of copying.

- im2col: one raw kernel (cu/conv.cu) reading ``x`` through its strides, with
  the zero padding done by bounds checks (no padded copy), launched on planes
  (positions x samples x rows) so that no thread divides by runtime sizes;
- col2im: one raw kernel that gathers, for each input element, the taps that
  read it; no atomics, deterministic, writes grad_x contiguous.

float16 and other dtypes without a kernel use strided views and adds instead.
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl
from fastnn_cuda import gemm, kernels
from fastnn_cuda._cupy import cupy as cp


def length_out(length, kernel_size, stride, padding, dilation):
    """L_out = (L + 2*padding - dilation*(K-1) - 1) // stride + 1."""
    return (length + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


def _columns_fallback(x, kernel_size, stride, padding, dilation, l_out):
    n, c, length = x.shape
    xp = cp.zeros((n, c, length + 2 * padding), dtype=x.dtype)
    xp[:, :, padding : padding + length] = x
    s_n, s_c, s_l = xp.strides
    windows = cp.lib.stride_tricks.as_strided(
        xp, shape=(c, kernel_size, n, l_out), strides=(s_c, dilation * s_l, s_n, stride * s_l)
    )
    return cp.ascontiguousarray(windows)


def columns(x, kernel_size, stride, padding, dilation, groups, l_out):
    """im2col: (groups, C_in/groups * K, N * L_out), a fresh contiguous array."""
    n, c, length = x.shape
    if kernels.has_kernel(x.dtype):
        cols = cp.empty((c, kernel_size, n, l_out), dtype=x.dtype)
        item = x.itemsize
        s_n, s_c, s_l = (s // item for s in x.strides)
        args = (x, cols, n, c, length, s_n, s_c, s_l, kernel_size, l_out, stride, padding,
                dilation)
        kernels.launch_planes("im2col", x.dtype, x.device.id, l_out, n, c * kernel_size, args)
    else:
        cols = _columns_fallback(x, kernel_size, stride, padding, dilation, l_out)
    return cols.reshape(groups, (c // groups) * kernel_size, n * l_out)


def _gemm(a, b):
    """Batched (groups, m, k) @ (groups, k, n); 2-D when there is one group (no copies)."""
    if a.shape[0] == 1:
        return gemm.matmul(cp, a[0], b[0])[None]
    return gemm.matmul(cp, a, b)


def _grad_out_rows(grad_out, groups):
    n, c_out, l_out = grad_out.shape
    rows = cp.ascontiguousarray(grad_out.transpose(1, 0, 2))
    return rows.reshape(groups, c_out // groups, n * l_out)


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    n = x.shape[0]
    c_out, c_in_g, k = weight.shape
    l_out = length_out(x.shape[2], k, stride, padding, dilation)
    cols = columns(x, k, stride, padding, dilation, groups, l_out)
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    out = _gemm(w, cols)  # (groups, C_out/groups, N * L_out)
    return out.reshape(c_out, n, l_out).transpose(1, 0, 2)


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out, l_out = grad_out.shape[1], grad_out.shape[2]
    cols = columns(x, kernel_size, stride, padding, dilation, groups, l_out)
    grad_w = _gemm(_grad_out_rows(grad_out, groups), cols.transpose(0, 2, 1))
    return grad_w.reshape(c_out, x.shape[1] // groups, kernel_size)


def _col2im_fallback(dcols, n, c_in, k, l_out, input_length, stride, padding, dilation):
    dxp = cp.zeros((c_in, n, input_length + 2 * padding), dtype=dcols.dtype)
    span = stride * (l_out - 1) + 1
    for tap in range(k):
        start = tap * dilation
        dxp[:, :, start : start + span : stride] += dcols[:, tap]
    return cp.ascontiguousarray(dxp[:, :, padding : padding + input_length].transpose(1, 0, 2))


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    n, c_out, l_out = grad_out.shape
    _, c_in_g, k = weight.shape
    c_in = c_in_g * groups
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    dcols = _gemm(w.transpose(0, 2, 1), _grad_out_rows(grad_out, groups))
    dcols = cp.ascontiguousarray(dcols).reshape(c_in, k, n, l_out)
    if not kernels.has_kernel(grad_out.dtype):
        return _col2im_fallback(dcols, n, c_in, k, l_out, input_length, stride, padding,
                                dilation)
    dx = cp.empty((n, c_in, input_length), dtype=grad_out.dtype)
    args = (dcols, dx, n, c_in, input_length, k, l_out, stride, padding, dilation)
    kernels.launch_planes("col2im", dx.dtype, dx.device.id, input_length, n, c_in, args)
    return dx
