"""conv1d and its two gradients with one BLAS GEMM per group.

The im2col matrix is laid out as (C_in, K, N, L_out) so that the copy out of
the strided window view runs along contiguous memory when stride == 1, and so
that one GEMM covers the whole batch instead of N small ones.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from fastnn.api.hookspec import hookimpl


def _padded(x, padding):
    if padding:
        n, c, length = x.shape
        xp = np.zeros((n, c, length + 2 * padding), dtype=x.dtype)
        xp[:, :, padding : padding + length] = x
        return xp
    return np.ascontiguousarray(x)


def _columns(x, kernel_size, stride, padding, dilation, groups, length_out):
    """im2col: (groups, C_in/groups * K, N * L_out), a fresh contiguous array."""
    xp = _padded(x, padding)
    n, c, _ = xp.shape
    s_n, s_c, s_l = xp.strides
    windows = as_strided(
        xp,
        shape=(c, kernel_size, n, length_out),
        strides=(s_c, dilation * s_l, s_n, stride * s_l),
        writeable=False,
    )
    return windows.reshape(groups, (c // groups) * kernel_size, n * length_out)


def _length_out(length, kernel_size, stride, padding, dilation):
    return (length + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    n = x.shape[0]
    c_out, c_in_g, k = weight.shape
    length_out = _length_out(x.shape[2], k, stride, padding, dilation)
    cols = _columns(x, k, stride, padding, dilation, groups, length_out)
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    out = np.matmul(w, cols)  # (groups, C_out/groups, N * L_out)
    return out.reshape(c_out, n, length_out).transpose(1, 0, 2)


def _grad_out_rows(grad_out, groups):
    n, c_out, length_out = grad_out.shape
    g = np.ascontiguousarray(grad_out.transpose(1, 0, 2))
    return g.reshape(groups, c_out // groups, n * length_out)


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out = grad_out.shape[1]
    cols = _columns(x, kernel_size, stride, padding, dilation, groups, grad_out.shape[2])
    grad_w = np.matmul(_grad_out_rows(grad_out, groups), cols.transpose(0, 2, 1))
    return grad_w.reshape(c_out, x.shape[1] // groups, kernel_size)


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    n, c_out, length_out = grad_out.shape
    _, c_in_g, k = weight.shape
    c_in = c_in_g * groups
    w = weight.reshape(groups, c_out // groups, c_in_g * k)
    dcols = np.matmul(w.transpose(0, 2, 1), _grad_out_rows(grad_out, groups))
    dcols = dcols.reshape(c_in, k, n, length_out)
    # col2im: scatter-add each kernel tap back onto the padded input positions.
    dxp = np.zeros((c_in, n, input_length + 2 * padding), dtype=grad_out.dtype)
    span = stride * (length_out - 1) + 1
    for tap in range(k):
        start = tap * dilation
        dxp[:, :, start : start + span : stride] += dcols[:, tap]
    return dxp[:, :, padding : padding + input_length].transpose(1, 0, 2)
