"""conv2d and its two gradients as BLAS GEMMs over an im2col matrix, one GEMM per group.

Two layouts of the zero-padded input, each channel one row of the (C, ...) array:

- *flat* (stride 1): every sample padded to (Hp, Wp) and the batch flattened
  into one long row per channel, a spare sample last. Output column ``q`` of
  the row reads input ``q + a*dilation_h*Wp + b*dilation_w`` for tap (a, b), so
  each im2col row is one contiguous copy and the input gradient is one long
  add per tap. The columns that fall in a sample's padding are computed and
  thrown away (the kept ones are (i, j) < (H_out, W_out) of each (Hp, Wp)).
- *per sample* (any stride, or where the flat layout would throw away more
  than it keeps): the columns are exactly (N, H_out, W_out), PyTorch's im2col.

The im2col matrix (C_in, KH, KW, columns) is a strided view of the padded input
copied once; work arrays are reused between calls (:mod:`fastnn_cpu.scratch`).
"""

from __future__ import annotations

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import scratch
from fastnn_cpu.conv import _weight_product

#: The flat layout computes Hp * Wp columns per sample for H_out * W_out kept ones; past
#: this ratio the per-sample layout is used instead.
FLAT_WASTE = 2.0


class _Layout2d:
    """Sizes of the layout of one conv2d call (see the module docstring)."""

    def __init__(self, n, size, kernel, stride, padding, dilation):
        (h, w), (kh, kw) = size, kernel
        (top, bottom), (left, right) = padding
        self.n, self.size, self.kernel, self.stride, self.dilation = n, size, kernel, stride, \
            dilation
        self.top, self.left = top, left
        self.hp, self.wp = h + top + bottom, w + left + right
        self.h_out = (self.hp - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        self.w_out = (self.wp - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        seg = self.hp * self.wp
        self.flat = stride == (1, 1) and seg <= FLAT_WASTE * self.h_out * self.w_out + 16
        self.samples = n + 1 if self.flat else n
        self.m = n * (seg if self.flat else self.h_out * self.w_out)

    def keep(self, rows):
        """The kept columns of ``rows`` (..., m) as a (..., N, H_out, W_out) view."""
        if not self.flat:
            return rows.reshape(*rows.shape[:-1], self.n, self.h_out, self.w_out)
        full = rows.reshape(*rows.shape[:-1], self.n, self.hp, self.wp)
        return full[..., : self.h_out, : self.w_out]

    def clear_thrown_away(self, rows) -> None:
        """Zero the columns of ``rows`` (..., m) that no kept output uses (flat layout)."""
        full = rows.reshape(*rows.shape[:-1], self.n, self.hp, self.wp)
        full[..., self.h_out :, :] = 0
        full[..., :, self.w_out :] = 0


def _padded(x, lay):
    """x (N, C, H, W) as (C, samples, Hp, Wp) with its zero padding (scratch)."""
    n, c, h, w = x.shape
    xp = scratch.zeros("conv2d_input", (c, lay.samples, lay.hp, lay.wp), x.dtype,
                       (n, lay.top, lay.left, h, w))
    xp[:, :n, lay.top : lay.top + h, lay.left : lay.left + w] = x.transpose(1, 0, 2, 3)
    return xp


def _columns(x, lay):
    """im2col: (C_in, KH, KW, m) (scratch)."""
    xp = _padded(x, lay)
    c = xp.shape[0]
    (kh, kw), (dh, dw), (sh, sw) = lay.kernel, lay.dilation, lay.stride
    s_c, s_n, s_h, s_w = xp.strides
    if lay.flat:
        shape = (c, kh, kw, lay.m)
        strides = (s_c, dh * s_h, dw * s_w, s_w)
    else:
        shape = (c, kh, kw, lay.n, lay.h_out, lay.w_out)
        strides = (s_c, dh * s_h, dw * s_w, s_n, sh * s_h, sw * s_w)
    # A strided view straight onto xp's (contiguous) buffer: as_strided costs ~10 us a call.
    windows = np.ndarray(shape, dtype=xp.dtype, buffer=xp, strides=strides)
    cols = scratch.empty("conv2d_columns", (c, kh, kw, lay.m), xp.dtype)
    np.copyto(cols.reshape(shape), windows)
    return cols


def _grad_rows(grad_out, lay):
    """grad_out (N, C_out, H_out, W_out) as (C_out, m), zero in thrown-away columns."""
    c = grad_out.shape[1]
    if lay.flat:
        g = scratch.zeros("conv2d_grad_out", (c, lay.m), grad_out.dtype,
                          (lay.h_out, lay.w_out))
    else:
        g = scratch.empty("conv2d_grad_out", (c, lay.m), grad_out.dtype)
    lay.keep(g)[...] = grad_out.transpose(1, 0, 2, 3)
    return g


@hookimpl
def conv2d(x, weight, stride, padding, dilation, groups):
    c_out, c_in_g, kh, kw = weight.shape
    lay = _Layout2d(x.shape[0], x.shape[2:], (kh, kw), stride, padding, dilation)
    cols = _columns(x, lay).reshape(groups, c_in_g * kh * kw, lay.m)
    out = np.empty((c_out, lay.m), dtype=x.dtype)
    w = weight.reshape(groups, c_out // groups, c_in_g * kh * kw)
    np.matmul(w, cols, out=out.reshape(groups, c_out // groups, lay.m))
    return lay.keep(out).transpose(1, 0, 2, 3)


@hookimpl
def conv2d_grad_weight(x, grad_out, kernel_size, stride, padding, dilation, groups):
    c_out = grad_out.shape[1]
    kh, kw = kernel_size
    c_in_g = x.shape[1] // groups
    lay = _Layout2d(x.shape[0], x.shape[2:], (kh, kw), stride, padding, dilation)
    cols = _columns(x, lay)
    g = _grad_rows(grad_out, lay).reshape(groups, c_out // groups, lay.m)
    rows = c_in_g * kh * kw
    grad_w = _weight_product(cols.reshape(groups, rows, lay.m), g)
    if lay.flat and not np.isfinite(grad_w).all():
        # NOTE: thrown-away columns read other samples' values (and the spare one); a NaN
        # or Inf there times their zero gradient is NaN: clear them and redo (rare).
        lay.clear_thrown_away(cols)
        grad_w = _weight_product(cols.reshape(groups, rows, lay.m), g)
    return grad_w.reshape(c_out, c_in_g, kh, kw)


@hookimpl
def conv2d_grad_input(grad_out, weight, input_size, stride, padding, dilation, groups):
    n, c_out = grad_out.shape[:2]
    _, c_in_g, kh, kw = weight.shape
    lay = _Layout2d(n, tuple(input_size), (kh, kw), stride, padding, dilation)
    g = _grad_rows(grad_out, lay).reshape(groups, c_out // groups, lay.m)
    # Tap-major weight rows, so that each tap's part of the product is one block.
    w = weight.reshape(groups, c_out // groups, c_in_g, kh, kw).transpose(0, 3, 4, 2, 1)
    taps = scratch.empty("conv2d_taps", (groups, kh * kw * c_in_g, lay.m), grad_out.dtype)
    np.matmul(w.reshape(groups, kh * kw * c_in_g, c_out // groups), g, out=taps)
    if lay.flat and not np.isfinite(weight).all():
        # NOTE: a NaN or Inf weight times the zero gradient of a thrown-away column is NaN,
        # which the adds below would carry onto input positions no output reads.
        lay.clear_thrown_away(taps)
    taps = taps.reshape(groups, kh, kw, c_in_g, lay.m)
    (dh, dw), (sh, sw) = lay.dilation, lay.stride
    dx = np.zeros((groups, c_in_g, lay.samples, lay.hp, lay.wp), dtype=grad_out.dtype)
    if lay.flat:
        flat = dx.reshape(groups, c_in_g, -1)
        for a in range(kh):
            for b in range(kw):
                start = a * dh * lay.wp + b * dw
                flat[..., start : start + lay.m] += taps[:, a, b]
    else:
        taps = taps.reshape(groups, kh, kw, c_in_g, n, lay.h_out, lay.w_out)
        for a in range(kh):
            for b in range(kw):
                rows = slice(a * dh, a * dh + sh * lay.h_out, sh)
                cols = slice(b * dw, b * dw + sw * lay.w_out, sw)
                dx[..., rows, cols] += taps[:, a, b]
    h, w_ = input_size
    dx = dx.reshape(groups * c_in_g, lay.samples, lay.hp, lay.wp)
    return dx[:, :n, lay.top : lay.top + h, lay.left : lay.left + w_].transpose(1, 0, 2, 3)
