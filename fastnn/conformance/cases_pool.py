"""Conformance cases of the pooling hooks: ``max_pool2d`` through F.max_pool2d (every window
geometry PyTorch allows: stride, padding, dilation, ceil_mode, 3-D input) and
``max_pool2d_backward`` at the hook, where each window's gradient goes to the one position
PyTorch's index names (ties: the first in the window's row-major order; a NaN max: the
last NaN).

The reference visits every window of every plane in float64.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ELEMENTWISE, GRADIENT, assert_close

NAN, INF = float("nan"), float("inf")


def _geometry(kernel_size, stride, padding, dilation):
    def two(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)

    kernel = two(kernel_size)
    return kernel, two(stride) if stride is not None else kernel, two(padding), two(dilation)


def _sizes(size, kernel, stride, padding, dilation, ceil_mode):
    out = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        o = -(-span // s) + 1 if ceil_mode else span // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out.append(o)
    return out


def _windows(shape, kernel, stride, padding, dilation, ceil_mode):
    """[(i, j, rows, cols)]: the input positions inside each output's window."""
    (h, w) = shape[-2:]
    oh, ow = _sizes((h, w), kernel, stride, padding, dilation, ceil_mode)
    found = []
    for i in range(oh):
        rows = [i * stride[0] - padding[0] + a * dilation[0] for a in range(kernel[0])]
        rows = [r for r in rows if 0 <= r < h]
        for j in range(ow):
            cols = [j * stride[1] - padding[1] + b * dilation[1] for b in range(kernel[1])]
            found.append((i, j, rows, [c for c in cols if 0 <= c < w]))
    return (oh, ow), found


def _picks(block, top):
    """Per window, the position PyTorch's index names in ``block`` (..., positions, in the
    window's row-major order) whose max is ``top``: the first equal to it, or, where the max
    is NaN, the last NaN."""
    first = np.argmax(block == top[..., None], axis=-1)
    last_nan = block.shape[-1] - 1 - np.argmax(np.isnan(block)[..., ::-1], axis=-1)
    return np.where(np.isnan(top), last_nan, first)


def max_pool2d_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """The max of each window, the element at PyTorch's index (of a tie of -0.0 and +0.0,
    the first)."""
    geometry = _geometry(kernel_size, stride, padding, dilation)
    (oh, ow), found = _windows(x.shape, *geometry, ceil_mode)
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i, j, rows, cols in found:
        block = x[..., rows, :][..., cols].reshape(x.shape[:-2] + (len(rows) * len(cols),))
        top = np.where(np.isnan(block).any(axis=-1), NAN, block.max(axis=-1))
        pick = _picks(block, top)
        out[..., i, j] = np.take_along_axis(block, pick[..., None], axis=-1)[..., 0]
    return out


def max_pool2d_grad_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                        *, grad_out):
    geometry = _geometry(kernel_size, stride, padding, dilation)
    out = max_pool2d_ref(x, kernel_size, stride, padding, dilation, ceil_mode)
    _, found = _windows(x.shape, *geometry, ceil_mode)
    dx = np.zeros_like(x)
    lead = x.shape[:-2]
    for i, j, rows, cols in found:
        r, c = (a.reshape(-1) for a in np.meshgrid(rows, cols, indexing="ij"))
        pick = _picks(x[..., r, c], out[..., i, j])
        for at in np.ndindex(*lead):
            dx[at + (r[pick[at]], c[pick[at]])] += grad_out[at + (i, j)]
    return (dx,)


_GEOMETRIES = [
    ((2, 3, 4, 6), dict(kernel_size=2)),
    ((2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 3, 7, 9), dict(kernel_size=3, stride=2, ceil_mode=True)),
    ((2, 2, 9, 8), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1))),
    ((2, 1, 6, 7), dict(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)),
    ((3, 5, 5), dict(kernel_size=2, stride=3, ceil_mode=True)),
    ((1, 1, 1, 5), dict(kernel_size=(1, 2))),
    ((2, 3, 5, 5), dict(kernel_size=5)),
]


def _samples(rng):
    return [Sample(f"{shape} {params}", (rng.normal(size=shape),), params)
            for shape, params in _GEOMETRIES]


def _edges(rng, dtype):
    x = rng.normal(size=(1, 2, 4, 4))
    x[0, 0, 1, 1] = NAN
    x[0, 1, 2, :] = -INF
    ties = np.maximum(rng.normal(size=(2, 2, 6, 6)), 0.0)  # after a ReLU: windows of zeros
    return [Sample("NaN and -inf (padding takes no part)", (x,),
                   dict(kernel_size=3, stride=1, padding=1)),
            Sample("ties", (ties,), dict(kernel_size=2)),
            Sample("empty batch", (np.zeros((0, 2, 4, 4)),), dict(kernel_size=2)),
            Sample("+inf", (np.full((1, 1, 3, 3), INF),), dict(kernel_size=2, stride=1))]


def _random(draw):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    ceil_mode = draw(st.booleans())
    size = tuple(d * (k - 1) + 1 + draw(st.integers(0, 4)) for k, d in zip(kernel, dilation))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + size
    params = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {shape} {params}", (rng.normal(size=shape),), params)


register(Case("max_pool2d", run=lambda x, **p: F.max_pool2d(x, **p), ref=max_pool2d_ref,
              grad_ref=max_pool2d_grad_ref, diff_args=(0,), samples=_samples, edges=_edges,
              random=_random, tol=dict(ELEMENTWISE)))


def _check_backward(device, dtype, rng):
    """The hook itself: ties (the first position takes the gradient), NaN windows (the last
    NaN), overlapping windows adding up, a non-contiguous input and a broadcast gradient."""
    ops = device.ops
    rtol, atol = GRADIENT[dtype]

    def put(a):
        return ops.from_numpy(np.ascontiguousarray(a, dtype=dtype), device.index)

    for shape, params in _GEOMETRIES + [((2, 3, 6, 6), dict(kernel_size=3, stride=1))]:
        if len(shape) == 3:
            continue
        kernel, stride, padding, dilation = _geometry(params["kernel_size"],
                                                      params.get("stride"),
                                                      params.get("padding", 0),
                                                      params.get("dilation", 1))
        ceil_mode = params.get("ceil_mode", False)
        for layout in ("ties", "NaN", "transposed", "broadcast grad"):
            x = np.round(rng.normal(size=shape), 0 if layout in ("ties", "NaN") else 6)
            if layout == "NaN":  # windows holding one NaN and windows holding several
                x[rng.random(shape) < 0.2] = NAN
            x = x.astype(dtype).astype(np.float64)
            if layout == "transposed":
                dx = ops.transpose(put(x.transpose(0, 1, 3, 2)), (0, 1, 3, 2))
            else:
                dx = put(x)
            sizes = tuple(_sizes(shape[2:], kernel, stride, padding, dilation, ceil_mode))
            out = ops.max_pool2d(dx, kernel, stride, padding, dilation, sizes)
            want_out = max_pool2d_ref(x, kernel, stride, padding, dilation, ceil_mode)
            what = f"max_pool2d {shape} {params} {layout}, {dtype}"
            assert_close(ops.to_numpy(out), want_out.astype(dtype), 0, 0, what)
            g = rng.normal(size=want_out.shape).astype(dtype).astype(np.float64)
            if layout == "broadcast grad":
                g[:] = g.flat[0]
                grad = ops.broadcast_to(ops.reshape(put(g.flat[:1]), (1, 1, 1, 1)), g.shape)
            else:
                grad = put(g)
            got = ops.max_pool2d_backward(dx, out, grad, kernel, stride, padding, dilation)
            (want,) = max_pool2d_grad_ref(x, kernel, stride, padding, dilation, ceil_mode,
                                          grad_out=g)
            assert_close(ops.to_numpy(got), want.astype(dtype), rtol, atol,
                         what + ": backward")


register(Case("max_pool2d_backward", check=_check_backward, tol=dict(GRADIENT)))
