"""conv1d and its two gradients, by im2col with NumPy's sliding windows: plain, not fast."""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl


def _windows(x, k, stride, padding, dilation):
    """(N, C, L_out, k) views of the padded input under each kernel position."""
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    span = dilation * (k - 1) + 1
    views = np.lib.stride_tricks.sliding_window_view(padded, span, axis=2)
    return views[:, :, ::stride, ::dilation]


def _grouped(weight, groups):
    c_out, c_in_g, k = weight.shape
    return weight.reshape(groups, c_out // groups, c_in_g, k)


@hookimpl
def conv1d(x, weight, stride, padding, dilation, groups):
    n, c_in, _ = x.shape
    cols = _windows(x, weight.shape[2], stride, padding, dilation)
    cols = cols.reshape(n, groups, c_in // groups, cols.shape[2], weight.shape[2])
    out = np.einsum("ngclk,gock->ngol", cols, _grouped(weight, groups))
    return np.ascontiguousarray(out.reshape(n, weight.shape[0], cols.shape[3])).astype(x.dtype)


@hookimpl
def conv1d_grad_input(grad_out, weight, input_length, stride, padding, dilation, groups):
    n, c_out, l_out = grad_out.shape
    _, c_in_g, k = weight.shape
    g = grad_out.reshape(n, groups, c_out // groups, l_out)
    taps = np.einsum("ngol,gock->ngclk", g, _grouped(weight, groups))
    padded = np.zeros((n, groups * c_in_g, input_length + 2 * padding), dtype=grad_out.dtype)
    taps = taps.reshape(n, groups * c_in_g, l_out, k)
    for j in range(k):  # scatter each tap back to where it read
        start = j * dilation
        padded[:, :, start:start + stride * (l_out - 1) + 1:stride] += taps[:, :, :, j]
    return padded[:, :, padding:padding + input_length]


@hookimpl
def conv1d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    n, c_in, _ = x.shape
    c_out = grad_out.shape[1]
    cols = _windows(x, kernel_size, stride, padding, dilation)
    cols = cols.reshape(n, groups, c_in // groups, cols.shape[2], kernel_size)
    g = grad_out.reshape(n, groups, c_out // groups, grad_out.shape[2])
    grad = np.einsum("ngclk,ngol->gock", cols, g)
    return grad.reshape(c_out, c_in // groups, kernel_size).astype(x.dtype)
