"""Stride-1 conv2d of one group and its gradients tap by tap, sample by sample, in C.

Each sample's zero-padded image (C, Hp, Wp) is one flat row of Hp * Wp positions per
channel, and tap (a, b) reads the stretch of it that starts at ``a*dh*Wp + b*dw``:

    out[n]  = sum_t W_t   @ xp[n][:, off_t : off_t + cols]           (cols = (H_out-1) Wp + W_out)
    dx[n]   = sum_t W'_t  @ gp[n][:, off'_t : off'_t + cols']        (W' the flipped W^T)
    dW_t    = sum_n g[n]  @ xp[n][:, off_t : off_t + cols]^T         (g with zeros in the gaps)

where ``gp`` is the output gradient padded by ``dilation * (k - 1) - padding`` on each
side. The columns that fall in a row's padding (Wp - W_out a row) are computed into a
scratch block and dropped. native_conv.c loops the samples and taps around one GEMM each,
so a sample's (C_out, cols) block is summed over the taps while it is in cache, where
the im2col path (:mod:`fastnn_cpu.conv_plan`, :mod:`fastnn_cpu.conv_batched`) copies a
column matrix of C_in * KH * KW rows first. On (32, 16, 32, 32) -> 16 and (64, 16, 14,
14) -> 32, 3x3 (the ResNet's and CNN's convs) it ran 1.3x faster forward and 1.4-1.5x
for the weight gradient (NumPy's OpenBLAS, one Xeon thread); with 1-3 input channels
the taps' GEMMs are too thin and it ran slower, so it takes MIN_CHANNELS and more.
"""

from __future__ import annotations

import numpy as np

from fastnn_cpu import conv_taps, native, scratch
from fastnn_cpu.finite import all_finite

#: Fewest input channels for which the tap loops run (below, the im2col's GEMMs of
#: C_in * KH * KW rows are the faster).
MIN_CHANNELS = 16


def applies(dtype, weight_shape, stride, padding, dilation, groups) -> bool:
    """Whether this path takes the call: the C loops built, float32 or float64, stride 1,
    one group, MIN_CHANNELS input channels or more, and no side padded wider than the
    kernel's span (the input gradient's padding is the span less it)."""
    if (np.dtype(dtype).char not in "fd" or tuple(stride) != (1, 1) or groups != 1
            or weight_shape[1] < MIN_CHANNELS):
        return False
    spans = [d * (k - 1) for d, k in zip(dilation, weight_shape[2:])]
    if any(not 0 <= p <= span for pair, span in zip(padding, spans) for p in pair):
        return False
    return native.conv_library() is not None


def _offsets(kernel, dilation, width) -> np.ndarray:
    (kh, kw), (dh, dw) = kernel, dilation
    return np.array([a * dh * width + b * dw for a in range(kh) for b in range(kw)],
                    np.int64)


def _padded(role, x, pads):
    """x (N, C, H, W) in zeros, ``pads`` ((top, bottom), (left, right)) wide."""
    (top, bottom), (left, right) = pads
    n, c, h, w = x.shape
    xp = scratch.zeros(role, (n, c, h + top + bottom, w + left + right), x.dtype,
                       (top, left, h, w))
    xp[:, :, top: top + h, left: left + w] = x
    return xp


def _taps(src, taps, out_shape, kernel, dilation):
    """out (N, O, HO, WO) = the taps' products summed over the flat padded ``src``."""
    lib = native.conv_library()
    n, c, hs, ws = src.shape
    o, ho, wo = out_shape
    out = np.empty((n, o, ho, wo), src.dtype)
    work = scratch.empty("conv2d_taps_block", (o, (ho - 1) * ws + wo), src.dtype)
    offs = _offsets(kernel, dilation, ws)
    char, a = src.dtype.char, native.address
    lib.conv2d_taps[char](lib.gemm[char], lib.ilp64, n, c, o, ho, wo, len(offs), a(offs),
                          hs * ws, ws, a(src), a(taps), a(work), a(out))
    return out


def forward(x, weight, padding, dilation):
    c_out, c_in, kh, kw = weight.shape
    xp = _padded("conv2d_taps_input", x, padding)
    ho, wo = xp.shape[2] - dilation[0] * (kh - 1), xp.shape[3] - dilation[1] * (kw - 1)
    taps = np.ascontiguousarray(weight.transpose(2, 3, 0, 1), x.dtype)  # (KH, KW, O, C)
    return _taps(xp, taps, (c_out, ho, wo), (kh, kw), dilation)


def grad_input(grad_out, weight, input_size, padding, dilation):
    """dx, the convolution of the padded gradient with the flipped, transposed weight; None
    where the weight is not finite (its NaN times the padding's zeros would reach input
    positions that no output reads: the im2col path leaves them alone)."""
    if not all_finite(weight):
        return None
    _, c_in, kh, kw = weight.shape
    spans = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
    pads = tuple((span - before, span - after) for span, (before, after) in zip(spans, padding))
    gp = _padded("conv2d_taps_grad", np.ascontiguousarray(grad_out), pads)
    taps = np.ascontiguousarray(weight[:, :, ::-1, ::-1].transpose(2, 3, 1, 0), grad_out.dtype)
    return _taps(gp, taps, (c_in,) + tuple(input_size), (kh, kw), dilation)


def grad_weight(x, grad_out, kernel, padding, dilation):
    """dW (C_out, C_in, KH, KW); None where it is not finite (a NaN or Inf the dropped
    columns read: the im2col path, which clears them, decides then)."""
    if not x.shape[0] or not grad_out.size:
        return None  # (no sample: the loop would write nothing; the im2col path gives 0)
    lib = native.conv_library()
    xp = _padded("conv2d_taps_input", x, padding)
    grad = np.ascontiguousarray(grad_out, x.dtype)
    n, c_in, hp, wp = xp.shape
    c_out, ho, wo = grad.shape[1:]
    rows = conv_taps.out_rows(c_in, c_out)
    kh, kw = kernel
    parts = np.empty((kh * kw,) + ((c_out, c_in) if rows else (c_in, c_out)), x.dtype)
    work = scratch.empty("conv2d_taps_block", (c_out, (ho - 1) * wp + wo), x.dtype)
    offs = _offsets(kernel, dilation, wp)
    char, a = x.dtype.char, native.address
    lib.conv2d_taps_weight[char](lib.gemm[char], lib.ilp64, n, c_in, c_out, ho, wo,
                                 len(offs), a(offs), hp * wp, wp, a(xp), a(grad), a(work),
                                 a(parts), int(rows))
    if not all_finite(parts):
        return None
    parts = parts.reshape(kh, kw, *parts.shape[1:])
    return np.ascontiguousarray(parts.transpose((2, 3, 0, 1) if rows else (3, 2, 0, 1)))
