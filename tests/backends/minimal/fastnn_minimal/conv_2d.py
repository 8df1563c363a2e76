"""conv2d and its two gradients, by im2col with NumPy's sliding windows: plain, not fast."""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl


def _windows(x, kernel, stride, padding, dilation):
    """(N, C, H_out, W_out, KH, KW) views of the padded input under each kernel position."""
    padded = np.pad(x, ((0, 0), (0, 0), *padding))
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    views = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=(2, 3))
    return views[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]


def _grouped(weight, groups):
    c_out, c_in_g, kh, kw = weight.shape
    return weight.reshape(groups, c_out // groups, c_in_g, kh, kw)


@hookimpl
def conv2d(x, weight, stride, padding, dilation, groups):
    n, c_in = x.shape[:2]
    cols = _windows(x, weight.shape[2:], stride, padding, dilation)
    cols = cols.reshape(n, groups, c_in // groups, *cols.shape[2:])
    out = np.einsum("ngchwab,gocab->ngohw", cols, _grouped(weight, groups))
    return np.ascontiguousarray(out.reshape(n, weight.shape[0], *out.shape[3:])).astype(x.dtype)


@hookimpl
def conv2d_grad_input(grad_out, weight, input_size, stride, padding, dilation, groups):
    n, c_out, h_out, w_out = grad_out.shape
    _, c_in_g, kh, kw = weight.shape
    g = grad_out.reshape(n, groups, c_out // groups, h_out, w_out)
    taps = np.einsum("ngohw,gocab->ngchwab", g, _grouped(weight, groups))
    taps = taps.reshape(n, groups * c_in_g, h_out, w_out, kh, kw)
    (top, bottom), (left, right) = padding
    h, w = input_size
    padded = np.zeros((n, groups * c_in_g, h + top + bottom, w + left + right),
                      dtype=grad_out.dtype)
    for a in range(kh):  # scatter each tap back to where it read
        for b in range(kw):
            rows = slice(a * dilation[0], a * dilation[0] + stride[0] * (h_out - 1) + 1,
                         stride[0])
            cols = slice(b * dilation[1], b * dilation[1] + stride[1] * (w_out - 1) + 1,
                         stride[1])
            padded[:, :, rows, cols] += taps[..., a, b]
    return padded[:, :, top:top + h, left:left + w]


@hookimpl
def conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    n, c_in = x.shape[:2]
    c_out = grad_out.shape[1]
    cols = _windows(x, kernel_size, stride, padding, dilation)
    cols = cols.reshape(n, groups, c_in // groups, *cols.shape[2:])
    g = grad_out.reshape(n, groups, c_out // groups, *grad_out.shape[2:])
    grad = np.einsum("ngchwab,ngohw->gocab", cols, g)
    return grad.reshape(c_out, c_in // groups, *kernel_size).astype(x.dtype)
