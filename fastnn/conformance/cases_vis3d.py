"""Conformance cases of the 3-D vision composites added after issue 21:
``conv_transpose3d`` and ``adaptive_max_pool3d`` (see :mod:`fastnn.conformance.cases_vis`
for how the references and their complex-step gradients are made)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import CASES, Sample, composite
from fastnn.conformance.cases_vis import _seeded, case

_BEFORE = set(CASES)


def _three(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


def conv_transpose3d_ref(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                         dilation=1):
    """Each input position scattered over a kernel-sized patch, one tap at a time."""
    s, p, o, d = map(_three, (stride, padding, output_padding, dilation))
    n, c_in, *size = x.shape
    _, c_out_g, *kernel = w.shape
    full = np.zeros((n, c_out_g * groups) + tuple(
        (m - 1) * t + e * (k - 1) + 1 + q for m, t, e, k, q in zip(size, s, d, kernel, o)),
        dtype=np.result_type(x, w))
    per_in = c_in // groups
    for g in range(groups):
        xs, ws = x[:, g * per_in:(g + 1) * per_in], w[g * per_in:(g + 1) * per_in]
        outs = slice(g * c_out_g, (g + 1) * c_out_g)
        for tap in np.ndindex(*kernel):
            window = tuple(slice(a * e, a * e + (m - 1) * t + 1, t)
                           for a, e, m, t in zip(tap, d, size, s))
            full[(slice(None), outs) + window] += np.einsum(
                "ncdhw,co->nodhw", xs, ws[(slice(None), slice(None)) + tap])
    out = full[(slice(None), slice(None)) + tuple(slice(q, m - q) for q, m in
                                                  zip(p, full.shape[2:]))]
    return out if bias is None else out + bias[:, None, None, None]


def _samples(rng):
    return [Sample("stride, padding, output_padding, groups", (
        rng.normal(size=(1, 4, 2, 3, 2)), rng.normal(size=(4, 1, 2, 2, 3))),
        dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2)),
        Sample("dilation, with bias", (rng.normal(size=(2, 2, 2, 2, 1)),
                                       rng.normal(size=(2, 3, 2, 1, 2)), rng.normal(size=3)),
               dict(dilation=(1, 1, 2)))]


def _random(draw):
    rng = _seeded(draw)
    stride = draw(st.integers(1, 2))
    xs = (1, 2, draw(st.integers(1, 3)), 2, 1)
    return Sample(f"random x {xs}", (rng.normal(size=xs), rng.normal(size=(2, 2, 2, 1, 2))),
                  dict(stride=stride, output_padding=draw(st.integers(0, stride - 1))))


case("conv_transpose3d", F.conv_transpose3d, conv_transpose3d_ref, _samples, _random,
     diff_args=(0, 1, 2))

def _bounds(length, size):
    return [((i * length) // size, -(-((i + 1) * length) // size)) for i in range(size)]


def adaptive_max_pool3d_ref(x, output_size):
    """One window at a time: the first element of largest real part (complex steps ride
    along on the imaginary part)."""
    size = output_size if isinstance(output_size, tuple) else (output_size,) * 3
    spatial = x.shape[-3:]
    out = np.zeros(x.shape[:-3] + size, dtype=x.dtype)
    windows = [_bounds(n, o) for n, o in zip(spatial, size)]
    for i, (d0, d1) in enumerate(windows[0]):
        for j, (h0, h1) in enumerate(windows[1]):
            for k, (w0, w1) in enumerate(windows[2]):
                box = x[..., d0:d1, h0:h1, w0:w1].reshape(x.shape[:-3] + (-1,))
                pick = np.argmax(np.real(box), axis=-1)[..., None]
                out[..., i, j, k] = np.take_along_axis(box, pick, axis=-1)[..., 0]
    return out


case("adaptive_max_pool3d", F.adaptive_max_pool3d, adaptive_max_pool3d_ref,
     lambda rng: [Sample("uneven windows", (rng.normal(size=(2, 2, 5, 3, 4)),),
                         dict(output_size=(2, 2, 3))),
                  Sample("unbatched, even", (rng.normal(size=(2, 4, 2, 4)),),
                         dict(output_size=(2, 1, 2)))],
     lambda draw: Sample("random", (_seeded(draw).normal(size=(1, 2, draw(st.integers(1, 4)),
                                                               3, 2)),),
                         dict(output_size=(1, draw(st.integers(1, 3)), 2))))

composite(*(c for name, c in CASES.items() if name not in _BEFORE))
