"""Fused hooks: softmax, log-softmax, softmax cross-entropy, RMS division, bias + activation,
and the backward passes of the last two.

Each is one kernel of ``kernels/fused.cl`` in place of the 2-8 primitive
launches of the core's composite. The row kernels (softmax, cross-entropy,
rms_div) take one work-item per row, or, on GPUs and for rows of 64 or more,
one work-group per row (``reduce.group_size``). bias_act's backward takes
one work-item per column, which sums its bias gradient as it goes, on narrow
arrays, and a 2-d kernel plus a reduction on wide ones.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import BIAS_ACT_KINDS, hookimpl
from fastnn_opencl import elementwise, misc, reduce
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, rounded

FILE = "fused.cl"
_I = np.int32
ACTS = BIAS_ACT_KINDS  # a kind's index is its code in the kernels



def _softmax(x: CLArray, axis: int, log_out: bool) -> CLArray:
    x = misc.contiguous(x)
    dev = x.dev
    out = dev.empty(x.shape, x.dtype)
    k = x.shape[axis]
    b = math.prod(x.shape[axis + 1:])
    rows = math.prod(x.shape[:axis]) * b
    wg = reduce.group_size(dev, k) if b == 1 else 0
    defines = (("T", CL_TYPES[x.dtype]), ("ACC", reduce._acc_type(x, 0)))
    if out.size and wg:
        kernel = dev.kernel(FILE, "k_softmax_group", defines + (("WG", wg),),
                            [None, None, _I, _I, _I])
        kernel(dev.queue, (rows * wg,), (wg,), out.data, x.data, x.offset, k, int(log_out))
    elif out.size:
        kernel = dev.kernel(FILE, "k_softmax", defines,
                            [None, None, _I, _I, _I, _I, _I])
        kernel(dev.queue, (rounded(rows, 16),), None, out.data, x.data, x.offset, k, b, rows,
               int(log_out))
    return out


@hookimpl
def softmax(x, axis):
    return _softmax(x, axis, False)


@hookimpl
def log_softmax(x, axis):
    return _softmax(x, axis, True)


def _ignore_args(ignore_index, smoothing) -> tuple:
    """The row kernels' last arguments: the ignore_index, whether there is one, and the
    label smoothing (0: none; typed T by the kernel's argument list)."""
    if ignore_index is None:
        return np.int64(0), _I(0), float(smoothing)
    return np.int64(ignore_index), _I(1), float(smoothing)


def _xent(logits, targets, ignore_index, smoothing=0.0):
    """(loss, probs, kept or None): kept (and loss 0) on the rows whose target is
    ``ignore_index``, where one is given; the loss label-smoothed by ``smoothing``."""
    logits, targets = misc.contiguous(logits), misc.contiguous(targets)
    dev = logits.dev
    n, c = logits.shape
    loss = dev.empty((n,), logits.dtype)
    probs = dev.empty((n, c), logits.dtype)
    kept = None if ignore_index is None else dev.empty((n,), logits.dtype)
    ignore = _ignore_args(ignore_index, smoothing)
    wg = reduce.group_size(dev, c)
    defines = (("T", CL_TYPES[logits.dtype]), ("TI", CL_TYPES[targets.dtype]),
               ("ACC", reduce._acc_type(logits, 0)))
    tail = ((loss if kept is None else kept).data,) + ignore
    if n and wg:
        kernel = dev.kernel(FILE, "k_softmax_xent_group", defines + (("WG", wg),),
                            [None, None, None, _I, None, _I, _I, None, None, None,
                             NP_TYPES[logits.dtype]])
        kernel(dev.queue, (n * wg,), (wg,), loss.data, probs.data, logits.data, logits.offset,
               targets.data, targets.offset, c, *tail)
    elif n:
        kernel = dev.kernel(FILE, "k_softmax_xent", defines,
                            [None, None, None, _I, None, _I, _I, _I, None, None, None,
                             NP_TYPES[logits.dtype]])
        kernel(dev.queue, (rounded(n, 16),), None, loss.data, probs.data, logits.data,
               logits.offset, targets.data, targets.offset, n, c, *tail)
    return loss, probs, kept


@hookimpl
def softmax_cross_entropy(logits, targets):
    return _xent(logits, targets, None)[:2]


@hookimpl
def cross_entropy_loss(logits, targets, ignore_index, reduction, label_smoothing):
    loss, probs, kept = _xent(logits, targets, int(ignore_index), float(label_smoothing))
    if reduction == "none":
        return loss, probs, None
    total = reduce.sum(kept, (0,), False)
    loss = reduce.sum(loss, (0,), False)
    return (elementwise.div(loss, total) if reduction == "mean" else loss), probs, total


@hookimpl
def rms_div(x, eps):
    x = misc.contiguous(x)
    dev = x.dev
    f = x.shape[-1]
    rows = x.size // f if f else math.prod(x.shape[:-1])
    out = dev.empty(x.shape, x.dtype)
    r = dev.empty(x.shape[:-1] + (1,), x.dtype)
    wg = reduce.group_size(dev, f)
    defines = (("T", CL_TYPES[x.dtype]), ("ACC", reduce._acc_type(x, 0)))
    if rows and wg:
        kernel = dev.kernel(FILE, "k_rms_div_group", defines + (("WG", wg),),
                            [None, None, None, _I, _I, NP_TYPES[x.dtype]])
        kernel(dev.queue, (rows * wg,), (wg,), out.data, r.data, x.data, x.offset, f, eps)
    elif rows:
        kernel = dev.kernel(FILE, "k_rms_div", defines,
                            [None, None, None, _I, _I, _I, NP_TYPES[x.dtype]])
        kernel(dev.queue, (rounded(rows, 16),), None, out.data, r.data, x.data, x.offset, rows,
               f, eps)
    return out, r


@hookimpl
def bias_act(x, bias, kind, slope):
    x, bias = misc.contiguous(x), misc.contiguous(bias)
    dev = x.dev
    out = dev.empty(x.shape, x.dtype)
    if out.size:
        defines = (("T", CL_TYPES[x.dtype]), ("ACT", ACTS.index(kind)))
        kernel = dev.kernel(FILE, "k_bias_act", defines,
                            [None, None, _I, None, _I, _I, _I, NP_TYPES[x.dtype]])
        features = x.shape[-1]
        rows = out.size // features
        kernel(dev.queue, (rounded(features, 16), rows), None, out.data, x.data, x.offset,
               bias.data, bias.offset, rows, features, slope)
    return out


# One work-item per column serves narrow arrays (a classifier's last layer); wider
# ones take the 2-d kernel and a reduction: PoCL does not vectorise the per-column
# loop (measured 2x slower than the composite at 128 x 512, 4x at 1024 x 2048).
COLUMN_FEATURES_MAX = 64


@hookimpl
def bias_act_backward(x, bias, out, grad, kind, slope):
    x, bias, out, grad = (misc.contiguous(a) for a in (x, bias, out, grad))
    dev = x.dev
    features = bias.shape[0]
    rows = x.size // features if features else 0
    defines = (("T", CL_TYPES[x.dtype]), ("ACT", ACTS.index(kind)),
               ("ACC", reduce._acc_type(x, 0)))
    if kind == "identity":  # dz is grad itself (as the composite's); dbias column sums
        dbias = dev.empty(bias.shape, x.dtype)
        if features:
            kernel = dev.kernel(FILE, "k_col_sums", defines, [None, None, _I, _I, _I])
            kernel(dev.queue, (rounded(-(-features // 4), 16),), None, dbias.data, grad.data,
                   grad.offset, rows, features)
        return grad, dbias
    dz = dev.empty(x.shape, x.dtype)
    args = (x.data, x.offset, bias.data, bias.offset, out.data, out.offset, grad.data,
            grad.offset, rows, features, slope)
    types = [None, _I, None, _I, None, _I, None, _I, _I, _I, NP_TYPES[x.dtype]]
    if features <= COLUMN_FEATURES_MAX:
        dbias = dev.empty(bias.shape, x.dtype)
        if features:
            kernel = dev.kernel(FILE, "k_bias_act_backward", defines, [None, None] + types)
            kernel(dev.queue, (rounded(features, 16),), None, dz.data, dbias.data, *args)
        return dz, dbias
    kernel = dev.kernel(FILE, "k_act_grad", defines, [None] + types)
    kernel(dev.queue, (rounded(features, 16), rows), None, dz.data, *args)
    return dz, reduce.sum(dz, tuple(range(dz.ndim - 1)), False)


@hookimpl
def relu_backward(out, grad):
    """One launch of the activations' gradient kernel (relu reads only out and grad: the
    x and bias slots are given out again), where the composite makes three."""
    if grad.shape != out.shape or grad.dtype != out.dtype:
        from fastnn.api import composite
        from fastnn.api.registry import get_backend

        return composite.relu_backward(get_backend("opencl").ops, out, grad)
    out, grad = misc.contiguous(out), misc.contiguous(grad)
    dev = out.dev
    dx = dev.empty(out.shape, out.dtype)
    n = out.size
    if n:
        defines = (("T", CL_TYPES[out.dtype]), ("ACT", ACTS.index("relu")),
                   ("ACC", reduce._acc_type(out, 0)))
        types = [None, _I, None, _I, None, _I, None, _I, _I, _I, NP_TYPES[out.dtype]]
        kernel = dev.kernel(FILE, "k_act_grad", defines, [None] + types)
        kernel(dev.queue, (rounded(n, 16), 1), None, dx.data, out.data, out.offset,
               out.data, out.offset, out.data, out.offset, grad.data, grad.offset, 1, n, 0.0)
    return dx


def _xent_backward(probs, targets, grad, ignore_index, smoothing=0.0):
    """grad (N,), or 0-d: every row's (read with stride 0)."""
    probs, targets = misc.contiguous(probs), misc.contiguous(targets)
    dev = probs.dev
    n, c = probs.shape
    out = dev.empty((n, c), probs.dtype)
    ignore = _ignore_args(ignore_index, smoothing)
    if out.size:
        defines = (("T", CL_TYPES[probs.dtype]), ("TI", CL_TYPES[targets.dtype]))
        kernel = dev.kernel(FILE, "k_softmax_xent_backward", defines,
                            [None, None, _I, None, _I, None, _I, _I, _I, _I, None, None,
                             NP_TYPES[probs.dtype]])
        kernel(dev.queue, (rounded(c, 16), n), None, out.data, probs.data, probs.offset,
               targets.data, targets.offset, grad.data, grad.offset,
               grad.strides[0] if grad.ndim else 0, n, c, *ignore)
    return out


@hookimpl
def softmax_cross_entropy_backward(probs, targets, grad):
    return _xent_backward(probs, targets, grad, None)


@hookimpl
def cross_entropy_loss_backward(probs, targets, grad, ignore_index, reduction, label_smoothing,
                                total):
    if reduction == "mean":
        grad = elementwise.div(grad, total)
    return _xent_backward(probs, targets, grad, int(ignore_index), float(label_smoothing))
