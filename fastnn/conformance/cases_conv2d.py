"""Conformance cases of conv2d, its two gradient primitives and ``conv2d_backward`` (both
gradients at once).

The reference is a direct loop over kernel taps in float64:
``out[n, o, i, j] = sum_{c, a, b} w[o, c, a, b] * xpad[n, g*Cg + c, i*sh + a*dh, j*sw + b*dw]``
for output channel o in group g; its adjoint gives the gradients.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.api import composite
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.cases_conv import register_gradient_cases
from fastnn.conformance.compare import ACCUMULATING, GRADIENT, assert_close

NAN = float("nan")
# (x shape, weight shape, params): strides, padding (int, pair, "same"), dilation, groups,
# size-1 and empty axes
CONV2D_CONFIGS = [
    ((2, 4, 6, 7), (6, 4, 3, 3), dict(padding=1)),
    ((2, 4, 7, 9), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    ((1, 3, 5, 5), (2, 3, 5, 5), dict()),
    ((2, 4, 6, 6), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    ((2, 3, 6, 5), (4, 3, 2, 2), dict(padding="same")),
    ((1, 2, 7, 6), (3, 2, 3, 3), dict(padding=2, dilation=2, stride=3)),
    ((3, 2, 1, 1), (3, 2, 1, 1), dict()),
    ((2, 1, 1, 6), (2, 1, 1, 3), dict(padding=(0, 1))),
    ((0, 2, 4, 4), (3, 2, 3, 3), dict(padding=1)),
    # the cpu backend's direct cases: pointwise (a batched GEMM) and depthwise (per tap)
    ((2, 3, 4, 5), (5, 3, 1, 1), dict()),
    ((2, 3, 5, 6), (3, 1, 3, 2), dict(padding="same", groups=3)),
    ((2, 3, 7, 6), (3, 1, 2, 3), dict(stride=(2, 1), dilation=(2, 1), padding=(1, 0),
                                      groups=3)),
    ((0, 3, 4, 4), (3, 1, 3, 3), dict(padding=1, groups=3)),
    # the cpu backend's batched im2col chunks (float32, 8+ channels each side): two
    # batches of four chunks
    ((3, 8, 12, 11), (9, 8, 3, 3), dict(padding=1)),
]


def _sides(padding, spans, stride):
    if padding == "same":
        return [((s - 1) // 2, s - 1 - (s - 1) // 2) for s in spans]
    p = (padding, padding) if isinstance(padding, int) else padding
    return [(v, v) for v in p]


def _geometry(x_shape, w_shape, stride=1, padding=0, dilation=1, groups=1):
    stride = (stride, stride) if isinstance(stride, int) else stride
    dilation = (dilation, dilation) if isinstance(dilation, int) else dilation
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, w_shape[2:])]
    sides = _sides(padding, spans, stride)
    sizes = [(n + lo + hi - span) // s + 1
             for n, (lo, hi), span, s in zip(x_shape[2:], sides, spans, stride)]
    return stride, dilation, sides, sizes


def _taps(stride, dilation, sizes, kernel):
    """For tap (a, b): the padded row and column indices it reads, per output position."""
    rows = [a * dilation[0] + stride[0] * np.arange(sizes[0]) for a in range(kernel[0])]
    cols = [b * dilation[1] + stride[1] * np.arange(sizes[1]) for b in range(kernel[1])]
    return rows, cols


def conv2d_ref(x, weight, stride=1, padding=0, dilation=1, groups=1):
    stride, dilation, sides, sizes = _geometry(x.shape, weight.shape, stride, padding, dilation)
    c_out, c_group, kh, kw = weight.shape
    xpad = np.pad(x, ((0, 0), (0, 0), *sides))
    out = np.zeros((x.shape[0], c_out, *sizes))
    rows, cols = _taps(stride, dilation, sizes, (kh, kw))
    per_out = c_out // groups
    for g in range(groups):
        xs = xpad[:, g * c_group:(g + 1) * c_group]
        os_ = slice(g * per_out, (g + 1) * per_out)
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, rows[a]][:, :, :, cols[b]]
                out[:, os_] += np.einsum("nchw,oc->nohw", patch, weight[os_, :, a, b])
    return out


def conv2d_grads(x, weight, grad_out, stride=1, padding=0, dilation=1, groups=1):
    """The adjoint of :func:`conv2d_ref`: (dL/dx, dL/dweight)."""
    stride, dilation, sides, sizes = _geometry(x.shape, weight.shape, stride, padding, dilation)
    c_out, c_group, kh, kw = weight.shape
    xpad = np.pad(x, ((0, 0), (0, 0), *sides))
    gxpad, gw = np.zeros_like(xpad), np.zeros_like(weight)
    rows, cols = _taps(stride, dilation, sizes, (kh, kw))
    per_out = c_out // groups
    for g in range(groups):
        cs, os_ = slice(g * c_group, (g + 1) * c_group), slice(g * per_out, (g + 1) * per_out)
        for a in range(kh):
            for b in range(kw):
                ix = np.ix_(range(x.shape[0]), range(cs.start, cs.stop), rows[a], cols[b])
                gw[os_, :, a, b] = np.einsum("nohw,nchw->oc", grad_out[:, os_], xpad[ix])
                np.add.at(gxpad, ix, np.einsum("nohw,oc->nchw", grad_out[:, os_],
                                               weight[os_, :, a, b]))
    (top, _), (left, _) = sides
    return gxpad[:, :, top:top + x.shape[2], left:left + x.shape[3]], gw


def _label(x_shape, w_shape):
    return f"x {x_shape} w {w_shape}"


def _conv_samples(rng):
    out = [Sample(_label(xs, ws), (rng.normal(size=xs), rng.normal(size=ws)), dict(p))
           for xs, ws, p in CONV2D_CONFIGS]
    xs, ws, p = CONV2D_CONFIGS[1]
    out.append(Sample("with bias", (rng.normal(size=xs), rng.normal(size=ws),
                                    rng.normal(size=ws[0])), dict(p)))
    return out


def _conv_edges(rng, dtype):
    xs, ws, p = CONV2D_CONFIGS[0]
    x = rng.normal(size=xs)
    x[0, 1, 2, 3] = NAN
    return [Sample("one NaN input", (x, rng.normal(size=ws)), dict(p))]


def _conv_random(draw):
    groups = draw(st.integers(1, 2))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    sizes = []
    for k, d, p in zip(kernel, dilation, padding):
        least = max(1, d * (k - 1) + 1 - 2 * p)
        sizes.append(draw(st.integers(least, least + 4)))
    xs, ws = (draw(st.integers(1, 2)), c_in, *sizes), (c_out, c_in // groups, *kernel)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    params = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return Sample(f"random {_label(xs, ws)}", (rng.normal(size=xs), rng.normal(size=ws)), params)


def _conv_run(x, weight, bias=None, **params):
    return F.conv2d(x, weight, bias, **params)


def _conv_reference(x, weight, bias=None, **params):
    out = conv2d_ref(x, weight, **params)
    return out if bias is None else out + bias[:, None, None]


def _conv_grad_ref(x, weight, bias=None, *, grad_out, **params):
    gx, gw = conv2d_grads(x, weight, grad_out, **params)
    return gx, gw, (None if bias is None else grad_out.sum(axis=(0, 2, 3)))


register(Case("conv2d", run=_conv_run, ref=_conv_reference, grad_ref=_conv_grad_ref,
              diff_args=(0, 1, 2), samples=_conv_samples, edges=_conv_edges,
              random=_conv_random, tol=dict(ACCUMULATING)))


register_gradient_cases("conv2d", F.conv2d, conv2d_ref, conv2d_grads, _conv_samples,
                        _conv_random)


# conv2d_backward at the hook level (the tape reaches it through the conv2d case, where x
# and the weight both need gradients): CONV2D_CONFIGS, a stride-1 layout of several column
# chunks on the cpu backend, one dilated in the cpu backend's batched chunks (one batch of
# three), and (opencl on CPU devices) stride-1 input gradients as packed GEMMs over each
# sample's im2col (32+ channels a group, an output narrower than 8; too big for the conv2d
# case's finite differences), against the float64 adjoint and the composite
BACKWARD_CONFIGS = CONV2D_CONFIGS + [
    ((3, 5, 40, 40), (4, 5, 3, 3), dict(padding=1)),
    ((2, 8, 9, 10), (8, 8, 3, 2), dict(padding=(2, 1), dilation=(2, 1))),
    ((2, 32, 7, 6), (32, 32, 3, 3), dict(padding=(1, 0))),
    ((2, 64, 6, 5), (64, 32, 2, 3), dict(padding=(1, 2), dilation=(2, 1), groups=2)),
]


def _attrs(x_shape, w_shape, p):
    stride, dilation, sides, sizes = _geometry(x_shape, w_shape, p.get("stride", 1),
                                               p.get("padding", 0), p.get("dilation", 1))
    return (tuple(stride), tuple(sides), tuple(dilation), p.get("groups", 1)), sizes


def _check_backward(device, dtype, rng):
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    def cast(a):
        return a.astype(dtype).astype(np.float64)

    for index, (xs, ws, p) in enumerate(BACKWARD_CONFIGS):
        attrs, sizes = _attrs(xs, ws, p)
        x, w = cast(rng.normal(size=xs)), cast(rng.normal(size=ws))
        g = cast(rng.normal(size=(xs[0], ws[0], *sizes)))
        if index == 0:
            x[0, 1, 2, 3] = NAN  # NaN reaches the weight gradient as the primitives pass it
        args = (put(x), put(w), put(g), *attrs)
        got = [ops.to_numpy(a) for a in ops.conv2d_backward(*args)]
        composed = [ops.to_numpy(a) for a in composite.conv2d_backward(ops, *args)]
        want = conv2d_grads(x, w, g, p.get("stride", 1), p.get("padding", 0),
                            p.get("dilation", 1), p.get("groups", 1))
        for name, a, b, ref in zip(("dx", "dweight"), got, composed, want):
            what = f"conv2d_backward {name} {_label(xs, ws)} {p}, {dtype}"
            scale = max(1.0, float(np.nanmax(np.abs(ref), initial=0.0)))
            assert_close(a, ref.astype(dtype), rtol, atol * scale, what)
            assert_close(a, b, rtol, atol * scale, what + " (against the composite)")


register(Case("conv2d_backward", check=_check_backward, tol=dict(GRADIENT)))
