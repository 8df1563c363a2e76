"""Stride-1 conv1d of one group and its gradients tap by tap, sample by sample: no im2col.

With ``xp`` the input padded on both ends and ``W_k = weight[:, :, k]``::

    out[n]      = sum_k W_k   @ xp[n][:, k*d : k*d + L_out]
    dx[n]       = sum_k W_k^T @ gp[n][:, span - k*d : span - k*d + L]
    dW[:, :, k] = sum_n g[n]  @ xp[n][:, k*d : k*d + L_out]^T

where ``gp`` is the output gradient with ``span - padding`` zeros in front. Each term is
one batched GEMM over the samples that BLAS reads straight from a shifted view (unit
inner stride, row stride the padded length), and the forward and input gradient come
out in the (N, C, L) layout, with no column matrix, no thrown-away columns and no
transposed copy. On a Zen 5 core (OpenBLAS's Haswell kernels) this ran 1.15-1.3x faster
than the flat layout's planned im2col GEMMs on (32, 16-32, 256) -> 32 with kernel 5
(benchmarks/bench_models.py's Conv1d), forward and both gradients. The weight gradient
goes by taps at every width: on an AMD EPYC core (SkylakeX kernels) one GEMM over an
im2col of the whole batch, tried for fewer than 128 im2col rows, ran 1.2-2.2x slower
than the taps on (32, 3-32, 64-256) k3-9, (64, 3, 100) k7 and (256, 4, 64) k3.

Short signals make the per-sample GEMMs too small: below MIN_LENGTH output positions the
flat layout of :mod:`fastnn_cpu.conv` stays.
"""

from __future__ import annotations

import numpy as np

from fastnn_cpu import gemm_split, mkl_gemm, native, scratch

#: Fewest output positions per sample for which the per-sample GEMMs run.
MIN_LENGTH = 64
#: Fewest input channels for which the forward goes by taps: with fewer, each tap's GEMM
#: is too thin, and a per-sample im2col with one GEMM a sample (split by
#: :mod:`fastnn_cpu.gemm_split`) runs instead. On (32, C_in, 64-256) -> 32, k3-9 (AMD EPYC,
#: SkylakeX kernels) the taps took 1.1-1.9x the im2col's time at 8-16 channels, 0.93-1.13x
#: at 24-32, 0.4-0.9x at 64.
FORWARD_TAP_MIN_CHANNELS = 24
#: Most bytes of im2col columns the forward writes before its GEMMs read them: a few
#: samples at a time, so that they are read back from the core's own cache. In
#: benchmarks/bench_models.py's Conv1d training step (first layer (32, 16, 256) -> 32, k5:
#: 80 KB of columns a sample) the whole batch's 2.6 MB at once made the step 5% slower
#: (AMD EPYC, 1 MB of L2 a core, one thread) than chunks of 1 to 4 samples, 1.02-1.03x
#: with 16; a loop over the forward alone, whose columns stay in the L3 cache between
#: calls, showed no difference.
COLUMNS_CHUNK_BYTES = 256 * 1024
#: With the C loops (native_conv.c) the forward goes by taps from this many input
#: channels: a sample's taps summed while its output block is in cache, (32, 16, 256) ->
#: 32 k5 ran in 0.34-0.39 ms against the im2col's 0.53-0.56 (one Xeon thread, the loops
#: through MKL's GEMM and then NumPy's OpenBLAS), at 8 channels 1.05-1.25x its time.
NATIVE_TAP_MIN_CHANNELS = 16


def out_rows(c_in: int, c_out: int) -> bool:
    """Whether the C weight gradient (conv1d's and conv2d's) sums (C_out, C_in) blocks a
    tap rather than (C_in, C_out) ones. Chosen with MKL's GEMM in the loops, where
    (C_in, C_out) blocks ran 1.1-4x faster at 3-48 input channels against 16-64 outputs
    except with 16 inputs and more outputs (1.2-1.5x slower). The loops call NumPy's
    OpenBLAS now, where the two orientations are within 0.8-1.25x of each other with no
    rule across shapes (conv2d's (64, 16, 14, 14) -> 32, the CNN's: these blocks 1.16x
    faster; conv1d's 16 -> 32: 1.16x slower; one Xeon thread): kept, to be tuned again."""
    return c_in == 16 and c_out > 16


def applies(length_out, kernel_size, stride, padding, dilation, groups):
    """Whether this path takes the call: stride 1, one group, a long enough output, and
    padding no wider than the kernel's span (the input gradient's front padding)."""
    return (stride == 1 and groups == 1 and length_out >= MIN_LENGTH
            and padding <= dilation * (kernel_size - 1))


def _padded_input(x, padding):
    n, c, length = x.shape
    xp = scratch.zeros("conv1d_taps_input", (n, c, length + 2 * padding), x.dtype, padding)
    xp[:, :, padding : padding + length] = x
    return xp


def _native(*arrays):
    """The C tap loops (native_conv.c) when they take these arrays: C-contiguous, of one
    float dtype, none empty; else None."""
    if not native.dense(*arrays) or not all(a.size for a in arrays):
        return None
    return native.conv_library()


def _sum_taps(taps, src, starts, length, out):
    """out = sum_k taps[k] @ src[:, :, starts[k] : starts[k] + length], batched over axis 0
    (in C, a sample's taps summed while its block is in cache, where native_conv.c is
    built; else one MKL call a tap, accumulating, where mkl_gemm takes it)."""
    lib = _native(taps, src, out)
    if lib is not None:
        char, a = out.dtype.char, native.address
        n, c_out, _ = out.shape
        first = np.asarray(starts, np.int64)
        lib.conv1d_taps[char](lib.gemm[char], lib.ilp64, n, src.shape[1], c_out, length,
                              len(starts), a(first), src.shape[2], a(src), a(taps), a(out))
        return out
    for k, start in enumerate(starts):
        if not mkl_gemm.shared_left(taps[k], src[:, :, start : start + length], out, k > 0):
            break  # (at the first tap: the others have its shapes and layouts)
    else:
        return out
    part = scratch.empty("conv1d_taps_part", out.shape, out.dtype)
    for k, start in enumerate(starts):
        np.matmul(taps[k], src[:, :, start : start + length], out=part if k else out)
        if k:
            np.add(out, part, out=out)
    return out


def forward(x, weight, padding, dilation):
    n, c_in, length = x.shape
    c_out, _, k = weight.shape
    length_out = length + 2 * padding - dilation * (k - 1)
    xp = _padded_input(x, padding)
    taps_from = (NATIVE_TAP_MIN_CHANNELS if _native(xp) is not None
                 else FORWARD_TAP_MIN_CHANNELS)
    if c_in < taps_from:
        # per-sample im2col, (C_in * K, L_out) a sample, and one GEMM a sample, a few
        # samples at a time (see COLUMNS_CHUNK_BYTES)
        s_n, s_c, s_l = xp.strides
        windows = np.ndarray((n, c_in, k, length_out), dtype=x.dtype, buffer=xp,
                             strides=(s_n, s_c, dilation * s_l, s_l))
        chunk = max(1, min(n, COLUMNS_CHUNK_BYTES // max(1, windows[:1].nbytes)))
        cols = scratch.empty("conv1d_taps_columns", (chunk,) + windows.shape[1:], x.dtype)
        out = np.empty((n, c_out, length_out), dtype=x.dtype)
        w = weight.reshape(c_out, c_in * k)
        for start in range(0, n, chunk):
            part = cols[: min(chunk, n - start)]
            np.copyto(part, windows[start : start + chunk])
            gemm_split.matmul(w, part.reshape(len(part), c_in * k, length_out),
                              out[start : start + chunk])
        return out
    taps = np.ascontiguousarray(weight.transpose(2, 0, 1))  # (K, C_out, C_in)
    out = np.empty((n, c_out, length_out), dtype=x.dtype)
    starts = [tap * dilation for tap in range(k)]
    return _sum_taps(taps, xp, starts, length_out, out)


def grad_input(grad_out, weight, length, padding, dilation):
    n, c_out, length_out = grad_out.shape
    _, c_in, k = weight.shape
    span = dilation * (k - 1)
    front = span - padding
    gp = scratch.zeros("conv1d_taps_grad", (n, c_out, length + span), grad_out.dtype, front)
    gp[:, :, front : front + length_out] = grad_out
    taps = np.ascontiguousarray(weight.transpose(2, 1, 0))  # (K, C_in, C_out)
    dx = np.empty((n, c_in, length), dtype=grad_out.dtype)
    starts = [span - tap * dilation for tap in range(k)]
    return _sum_taps(taps, gp, starts, length, dx)


def grad_weight(x, grad_out, kernel_size, padding, dilation):
    n, c_in, _ = x.shape
    c_out, length_out = grad_out.shape[1:]
    xp = _padded_input(x, padding)
    grad = np.ascontiguousarray(grad_out)
    lib = _native(xp, grad)
    if lib is not None:  # each tap's (C_out, C_in) block summed over the samples in C
        char, a = x.dtype.char, native.address
        rows = out_rows(c_in, c_out)
        parts = np.empty((kernel_size,) + ((c_out, c_in) if rows else (c_in, c_out)),
                         x.dtype)
        first = np.arange(kernel_size, dtype=np.int64) * dilation
        lib.conv1d_taps_weight[char](lib.gemm[char], lib.ilp64, n, c_in, c_out, length_out,
                                     kernel_size, a(first), xp.shape[2], a(xp), a(grad),
                                     a(parts), int(rows))
        return np.ascontiguousarray(parts.transpose((1, 2, 0) if rows else (2, 1, 0)))
    # (N, L_out, C_out), which BLAS reads transposed; a view with other strides (a
    # broadcast gradient) would send np.matmul to its loop without BLAS
    g_t = grad.transpose(0, 2, 1)
    parts = scratch.empty("conv1d_taps_weight", (kernel_size, n, c_in, c_out), x.dtype)
    for tap in range(kernel_size):
        start = tap * dilation
        np.matmul(xp[:, :, start : start + length_out], g_t, out=parts[tap])
    total = np.add.reduce(parts, axis=1)  # (K, C_in, C_out)
    return np.ascontiguousarray(total.transpose(2, 1, 0))
