"""Conformance cases of issue 21's composite vision ops: transposed convolution, unfold and
fold, the normalisation functions, interpolate, pixel shuffles, normalize,
pairwise_distance and the margin and likelihood losses.

Each reference is NumPy float64 written another way than the op (loops over kernel taps,
explicit gathers and scatters). The analytic gradient is the reference's own, by complex
steps: d out / d x_k = Im(ref(x + i h e_k)) / h, exact to rounding for these analytic
(or piecewise-analytic, away from kinks) maps, so every reference here is written to
accept complex input (kinks tested on the real part).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import CASES, Case, Sample, composite, register
from fastnn.conformance.compare import ACCUMULATING, TRANSCENDENTAL

NAN = float("nan")
_BEFORE = set(CASES)
_STEP = 1e-30


def complex_step(ref, diff_args):
    """grad_ref(*args, grad_out, **params) of ``ref`` by complex steps, for ``diff_args``."""

    def grad_ref(*args, grad_out, **params):
        grads = []
        for i, arg in enumerate(args):
            if i not in diff_args or not isinstance(arg, np.ndarray):
                grads.append(None)
                continue
            grad = np.zeros(arg.shape)
            for k in np.ndindex(arg.shape):
                shifted = arg.astype(complex)
                shifted[k] += 1j * _STEP
                out = ref(*args[:i], shifted, *args[i + 1:], **params)
                grad[k] = np.sum(np.imag(out) / _STEP * grad_out)
            grads.append(grad)
        return tuple(grads)

    return grad_ref


def _relu(z):
    return z * (np.real(z) > 0)


def _abs(z):
    return z * np.sign(np.real(z))


def case(name, run, ref, samples, random, diff_args=(0,), edges=None, tol=ACCUMULATING,
         grad_check="both"):
    """Register a composite case with a complex-step gradient and a NaN edge."""

    def nan_edges(rng, dtype):
        first = samples(rng)[0]
        x = np.array(first.args[0], dtype=np.float64)
        x.reshape(-1)[0] = NAN
        return [Sample("one NaN input", (x,) + first.args[1:], first.params)]

    register(Case(name, run=run, ref=ref, samples=samples, random=random,
                  grad_ref=complex_step(ref, diff_args), diff_args=diff_args,
                  edges=edges or nan_edges, tol=dict(tol), grad_check=grad_check))


def _seeded(draw):
    return np.random.default_rng(draw(st.integers(0, 2**31)))


# ---------------------------------------------------------------- transposed convolution


def _two(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv_transpose2d_ref(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    (sh, sw), (ph, pw), (oh, ow), (dh, dw) = map(_two, (stride, padding, output_padding,
                                                        dilation))
    n, c_in, h, wd = x.shape
    _, c_out_g, kh, kw = w.shape
    full = np.zeros((n, c_out_g * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oh,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + ow), dtype=np.result_type(x, w))
    per_in = c_in // groups
    for g in range(groups):
        xs, ws = x[:, g * per_in:(g + 1) * per_in], w[g * per_in:(g + 1) * per_in]
        outs = slice(g * c_out_g, (g + 1) * c_out_g)
        for a in range(kh):
            for b in range(kw):
                rows = slice(a * dh, a * dh + (h - 1) * sh + 1, sh)
                cols = slice(b * dw, b * dw + (wd - 1) * sw + 1, sw)
                full[:, outs, rows, cols] += np.einsum("nchw,co->nohw", xs, ws[:, :, a, b])
    out = full[:, :, ph:full.shape[2] - ph, pw:full.shape[3] - pw]
    return out if bias is None else out + bias[:, None, None]


def _conv_t_samples(rng):
    configs = [((2, 4, 3, 4), (4, 3, 3, 2), dict(stride=2, padding=1, output_padding=1)),
               ((1, 4, 3, 3), (4, 1, 2, 3), dict(stride=(1, 2), groups=2, dilation=(2, 1))),
               ((2, 2, 2, 3), (2, 3, 3, 3), dict(padding=(1, 2))),
               ((1, 2, 3, 4), (2, 2, 2, 3), dict(dilation=2, output_padding=1, padding=(2, 1))),
               ((1, 2, 3, 2), (2, 1, 2, 2), dict(stride=3, padding=(2, 1)))]
    out = [Sample(f"x {xs} w {ws}", (rng.normal(size=xs), rng.normal(size=ws)), p)
           for xs, ws, p in configs]
    out.append(Sample("with bias", (rng.normal(size=(1, 2, 3, 2)), rng.normal(size=(2, 2, 2, 2)),
                                    rng.normal(size=2)), dict(stride=2)))
    return out


def _conv_t_random(draw):
    rng = _seeded(draw)
    groups, k = draw(st.integers(1, 2)), (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride, dilation = (draw(st.integers(1, 3)), 1), (1, draw(st.integers(1, 2)))
    xs = (draw(st.integers(1, 2)), 2 * groups, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    # padding that leaves at least one output row: 2 p <= (H - 1) s + K - 1
    padding = (draw(st.integers(0, ((xs[2] - 1) * stride[0] + k[0] - 1) // 2)), 0)
    ws = (2 * groups, draw(st.integers(1, 2)), *k)
    params = dict(stride=stride, padding=padding, groups=groups, dilation=dilation,
                  output_padding=(draw(st.integers(0, stride[0] - 1)), 0))
    return Sample(f"random x {xs} w {ws}", (rng.normal(size=xs), rng.normal(size=ws)), params)


case("conv_transpose2d", F.conv_transpose2d, conv_transpose2d_ref, _conv_t_samples,
     _conv_t_random, diff_args=(0, 1, 2))


def _conv_t1d_ref(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    out = conv_transpose2d_ref(x[:, :, None], w[:, :, None], None, (1, stride), (0, padding),
                               (0, output_padding), groups, (1, dilation))
    return out[:, :, 0]


def _conv_t1d_samples(rng):
    return [Sample("stride 3, groups 2", (rng.normal(size=(2, 4, 3)), rng.normal(size=(4, 2, 3))),
                   dict(stride=3, padding=1, output_padding=2, groups=2, dilation=2)),
            Sample("defaults", (rng.normal(size=(1, 2, 4)), rng.normal(size=(2, 3, 2))), {})]


def _conv_t1d_random(draw):
    rng = _seeded(draw)
    stride = draw(st.integers(1, 3))
    params = dict(stride=stride, output_padding=draw(st.integers(0, stride - 1)))
    xs, ws = (1, 2, draw(st.integers(1, 4))), (2, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return Sample(f"random x {xs} w {ws}", (rng.normal(size=xs), rng.normal(size=ws)), params)


case("conv_transpose1d", lambda x, w, **p: F.conv_transpose1d(x, w, **p), _conv_t1d_ref,
     _conv_t1d_samples, _conv_t1d_random, diff_args=(0, 1))


def conv3d_ref(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    s, p, d = ((v,) * 3 if isinstance(v, int) else tuple(v) for v in (stride, padding,
                                                                        dilation))
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((q, q) for q in p))
    c_out, c_g, *kernel = w.shape
    sizes = [(n + 2 * q - e * (k - 1) - 1) // t + 1
             for n, q, e, k, t in zip(x.shape[2:], p, d, kernel, s)]
    out = np.zeros((x.shape[0], c_out, *sizes), dtype=np.result_type(x, w))
    per_out = c_out // groups
    for g in range(groups):
        xs, os_ = xp[:, g * c_g:(g + 1) * c_g], slice(g * per_out, (g + 1) * per_out)
        for tap in np.ndindex(*kernel):
            window = tuple(slice(a * e, a * e + (m - 1) * t + 1, t)
                           for a, e, m, t in zip(tap, d, sizes, s))
            out[:, os_] += np.einsum("ncdhw,oc->nodhw", xs[(slice(None), slice(None)) + window],
                                     w[(os_, slice(None)) + tap])
    return out if bias is None else out + bias[:, None, None, None]


case("conv3d", F.conv3d, conv3d_ref,
     lambda rng: [Sample("stride, padding, dilation, groups", (
         rng.normal(size=(2, 4, 4, 3, 3)), rng.normal(size=(4, 2, 2, 2, 1))),
         dict(stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)),
         Sample("with bias", (rng.normal(size=(1, 2, 3, 3, 2)), rng.normal(size=(3, 2, 2, 1, 2)),
                              rng.normal(size=3)), {})],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, 2, draw(st.integers(2, 4)),
                                                               2, 2)),
                                    _seeded(draw).normal(size=(2, 2, 2, 2, 1))),
                         dict(padding=draw(st.integers(0, 1)))),
     diff_args=(0, 1, 2))


# ---------------------------------------------------------------- unfold and fold


def _blocks(size, kernel, dilation, padding, stride):
    return [(n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, k, d, p, s in zip(size, kernel, dilation, padding, stride)]


def unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = map(_two, (kernel_size, dilation, padding, stride))
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    bh, bw = _blocks(x.shape[2:], k, d, p, s)
    cols = [xp[:, :, a * d[0]:a * d[0] + (bh - 1) * s[0] + 1:s[0],
               b * d[1]:b * d[1] + (bw - 1) * s[1] + 1:s[1]]
            for a in range(k[0]) for b in range(k[1])]
    out = np.stack(cols, axis=2)  # (N, C, taps, bh, bw)
    return out.reshape(x.shape[0], -1, bh * bw)


def fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s, size = map(_two, (kernel_size, dilation, padding, stride, output_size))
    bh, bw = _blocks(size, k, d, p, s)
    n, taps = cols.shape[0], k[0] * k[1]
    grid = cols.reshape(n, -1, k[0], k[1], bh, bw)
    out = np.zeros((n, grid.shape[1], size[0] + 2 * p[0], size[1] + 2 * p[1]), dtype=cols.dtype)
    for a in range(k[0]):
        for b in range(k[1]):
            out[:, :, a * d[0]:a * d[0] + (bh - 1) * s[0] + 1:s[0],
                b * d[1]:b * d[1] + (bw - 1) * s[1] + 1:s[1]] += grid[:, :, a, b]
    del taps
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def _unfold_samples(rng):
    return [Sample("kernel (2, 3), padding, stride, dilation", (rng.normal(size=(2, 2, 4, 5)),),
                   dict(kernel_size=(2, 3), padding=1, stride=(2, 1), dilation=(1, 2))),
            Sample("kernel 2", (rng.normal(size=(1, 3, 3, 3)),), dict(kernel_size=2))]


def _unfold_random(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    shape = (1, draw(st.integers(1, 2)), draw(st.integers(k[0], 5)), draw(st.integers(k[1], 5)))
    params = dict(kernel_size=k, stride=draw(st.integers(1, 2)), padding=draw(st.integers(0, 1)))
    return Sample(f"random {shape}", (_seeded(draw).normal(size=shape),), params)


# named apart from helper struct's "unfold" case (the Tensor method)
case("unfold_im2col", F.unfold, unfold_ref, _unfold_samples, _unfold_random)


def _fold_samples(rng):
    return [Sample("overlapping, padded", (rng.normal(size=(2, 12, 12)),),
                   dict(output_size=(5, 7), kernel_size=(2, 3), stride=2, padding=1)),
            Sample("kernel 2, stride 1", (rng.normal(size=(1, 8, 9)),),
                   dict(output_size=4, kernel_size=2))]


def _fold_random(draw):
    k, size = draw(st.integers(1, 3)), (draw(st.integers(3, 5)), draw(st.integers(3, 5)))
    stride = draw(st.integers(1, 2))
    blocks = _blocks(size, (k, k), (1, 1), (0, 0), (stride, stride))
    shape = (1, 2 * k * k, blocks[0] * blocks[1])
    params = dict(output_size=size, kernel_size=k, stride=stride)
    return Sample(f"random {shape}", (_seeded(draw).normal(size=shape),), params)


case("fold", F.fold, fold_ref, _fold_samples, _fold_random)


# ---------------------------------------------------------------- resampling


def _resample_axis(x, axis, m, mode, align_corners):
    n = x.shape[axis]
    i = np.arange(m)
    if mode == "nearest":
        return np.take(x, np.minimum((i * n) // m, n - 1), axis=axis)
    if align_corners:
        src = i * ((n - 1) / (m - 1)) if m > 1 else np.zeros(m)
    else:
        src = np.maximum((i + 0.5) * (n / m) - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(int), n - 1)
    high = np.minimum(low + 1, n - 1)
    shape = (m,) + (1,) * (x.ndim - axis - 1)
    weight = (src - low).reshape(shape)
    return np.take(x, low, axis=axis) * (1 - weight) + np.take(x, high, axis=axis) * weight


def _cubic_ref_axis(x, axis, m, align_corners):
    """Keys' cubic convolution (a = -0.75) at each output position, taps clamped."""
    n, a = x.shape[axis], -0.75

    def kernel(d):
        d = abs(d)
        if d <= 1:
            return ((a + 2) * d - (a + 3)) * d * d + 1
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0

    rows = []
    for i in range(m):
        src = i * (n - 1) / (m - 1) if align_corners and m > 1 else (
            0.0 if align_corners else (i + 0.5) * n / m - 0.5)
        base = int(np.floor(src))
        rows.append(sum(kernel(src - (base + t)) * np.take(x, min(max(base + t, 0), n - 1),
                                                           axis=axis)
                        for t in range(-1, 3)))
    return np.stack(rows, axis=axis)


def interpolate_ref(x, size, mode="nearest", align_corners=None):
    for k, m in enumerate(size):
        if mode == "bicubic":
            x = _cubic_ref_axis(x, 2 + k, m, bool(align_corners))
            continue
        x = _resample_axis(x, 2 + k, m, "nearest" if mode == "nearest" else "linear",
                           bool(align_corners))
    return x


def _interp_samples(rng):
    # sizes coprime with the input's, so no source index lies on a rounding boundary
    return [Sample("nearest up", (rng.normal(size=(2, 2, 3, 5)),), dict(size=(7, 8))),
            Sample("nearest down", (rng.normal(size=(1, 2, 7, 5)),), dict(size=(3, 2))),
            Sample("bilinear", (rng.normal(size=(2, 2, 3, 4)),),
                   dict(size=(5, 7), mode="bilinear")),
            Sample("bilinear align_corners", (rng.normal(size=(1, 2, 3, 4)),),
                   dict(size=(5, 2), mode="bilinear", align_corners=True)),
            Sample("linear", (rng.normal(size=(2, 3, 4)),), dict(size=(7,), mode="linear")),
            Sample("bicubic", (rng.normal(size=(1, 2, 3, 4)),), dict(size=(5, 3),
                                                                    mode="bicubic")),
            Sample("bicubic align_corners", (rng.normal(size=(1, 1, 4, 3)),),
                   dict(size=(6, 5), mode="bicubic", align_corners=True))]


def _interp_random(draw):
    n, m = draw(st.integers(1, 5)), draw(st.integers(1, 9))
    mode = draw(st.sampled_from(["bilinear", "nearest"]))
    if mode == "nearest":
        m = next(v for v in range(m, m + 20) if np.gcd(v, n) == 1)
    corners = draw(st.booleans()) if mode == "bilinear" else None
    return Sample(f"random {mode} {n} -> {m}", (_seeded(draw).normal(size=(1, 2, n, 3)),),
                  dict(size=(m, 2), mode=mode, align_corners=corners))


case("interpolate", lambda x, size, **p: F.interpolate(x, size=size, **p), interpolate_ref,
     _interp_samples, _interp_random, tol=TRANSCENDENTAL)


def pixel_shuffle_ref(x, r=2):
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle_ref(x, r=2):
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.transpose(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle_ref(x, groups=2):
    n, c = x.shape[:2]
    y = x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2)
    return y.reshape(x.shape)


case("channel_shuffle", lambda x, groups=2: F.channel_shuffle(x, groups), channel_shuffle_ref,
     lambda rng: [Sample("groups 2", (rng.normal(size=(2, 6, 3)),), {}),
                  Sample("groups 3, 4-D", (rng.normal(size=(1, 6, 2, 2)),), dict(groups=3))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, 4, draw(st.integers(1, 3)))),),
                         dict(groups=draw(st.sampled_from([1, 2, 4])))))
case("pixel_shuffle", lambda x, r=2: F.pixel_shuffle(x, r), pixel_shuffle_ref,
     lambda rng: [Sample("r 2", (rng.normal(size=(2, 8, 2, 3)),), {}),
                  Sample("r 3, unbatched", (rng.normal(size=(9, 1, 2)),), dict(r=3))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, 4 * draw(st.integers(1, 2)),
                                                               2, 2)),), {}))
case("pixel_unshuffle", lambda x, r=2: F.pixel_unshuffle(x, r), pixel_unshuffle_ref,
     lambda rng: [Sample("r 2", (rng.normal(size=(2, 2, 4, 6)),), {})],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, draw(st.integers(1, 3)),
                                                               2, 4)),), {}))


composite(*(c for name, c in CASES.items() if name not in _BEFORE))
