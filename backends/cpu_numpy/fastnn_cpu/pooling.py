"""Max pooling on host arrays: one maximum per window tap over a strided view of the input
(no padded copy, no window-sized temporary), and a backward pass that writes each tap's
share through the same views."""

from __future__ import annotations

import numpy as np

from fastnn.api.composite_pool import taps
from fastnn.api.hookspec import hookimpl


def _views(x, out_shape, kernel, stride, padding, dilation):
    """[(output block index, input index)] per tap that reads the input."""
    found = taps(x.shape[2:], kernel, stride, padding, dilation, out_shape[2:])
    return [((Ellipsis, slice(*ri), slice(*ci)), (Ellipsis, slice(*rows), slice(*cols)))
            for (ri, ci), (rows, cols) in found]


@hookimpl
def max_pool2d(x, kernel, stride, padding, dilation, output_size):
    shape = tuple(x.shape[:2]) + tuple(output_size)
    views = _views(x, shape, kernel, stride, padding, dilation)
    whole = (Ellipsis, slice(0, shape[2]), slice(0, shape[3]))
    if views and views[0][0] == whole:  # the first tap covers every output: start from it
        out = np.array(x[views[0][1]], copy=True, order="C")
        views = views[1:]
    else:
        out = np.full(shape, -np.inf, dtype=x.dtype)
    for block, index in views:
        target = out[block]
        np.maximum(target, x[index], out=target)
    return out


@hookimpl
def max_pool2d_backward(x, out, grad, kernel, stride, padding, dilation):
    views = _views(x, out.shape, kernel, stride, padding, dilation)
    masks = [np.equal(x[index], out[block]) for block, index in views]
    share = grad
    if len(masks) > 1:
        count = np.zeros(out.shape, np.uint8 if len(masks) < 256 else np.int32)
        for (block, _), m in zip(views, masks):
            target = count[block]
            np.add(target, m, out=target, casting="unsafe")
        if count.max(initial=0) > 1:  # ties share the gradient evenly
            share = grad / np.maximum(count, 1).astype(grad.dtype)
    dx = np.zeros(x.shape, dtype=grad.dtype)
    overlap = any(s < d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    for (block, index), m in zip(views, masks):
        region = dx[index]
        if overlap:
            region += m * share[block]
        else:  # disjoint windows: each input position is written once
            np.multiply(m, share[block], out=region)
    return dx

