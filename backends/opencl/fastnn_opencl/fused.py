"""Fused hooks: softmax, log-softmax, softmax cross-entropy, RMS division, bias + activation.

Each is one kernel of ``kernels/fused.cl`` in place of the 4-8 primitive
launches of the core's composite, with one work-item per row (rows are short
next to the number of rows in a training batch).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, rounded

FILE = "fused.cl"
_I = np.int32
ACTS = ("identity", "relu", "leaky_relu", "sigmoid", "tanh", "silu", "gelu", "softplus")


def _dense(x: CLArray) -> CLArray:
    return x if x.is_contiguous else elementwise.copy(x)


def _softmax(x: CLArray, axis: int, log_out: bool) -> CLArray:
    x = _dense(x)
    dev = x.dev
    out = dev.empty(x.shape, x.dtype)
    k = x.shape[axis]
    b = math.prod(x.shape[axis + 1:])
    rows = math.prod(x.shape[:axis]) * b
    if out.size:
        kernel = dev.kernel(FILE, "k_softmax", (("T", CL_TYPES[x.dtype]),),
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


@hookimpl
def softmax_cross_entropy(logits, targets):
    logits, targets = _dense(logits), _dense(targets)
    dev = logits.dev
    n, c = logits.shape
    loss = dev.empty((n,), logits.dtype)
    probs = dev.empty((n, c), logits.dtype)
    if n:
        defines = (("T", CL_TYPES[logits.dtype]), ("TI", CL_TYPES[targets.dtype]))
        kernel = dev.kernel(FILE, "k_softmax_xent", defines,
                            [None, None, None, _I, None, _I, _I, _I])
        kernel(dev.queue, (rounded(n, 16),), None, loss.data, probs.data, logits.data,
               logits.offset, targets.data, targets.offset, n, c)
    return loss, probs


@hookimpl
def rms_div(x, eps):
    x = _dense(x)
    dev = x.dev
    f = x.shape[-1]
    rows = x.size // f if f else math.prod(x.shape[:-1])
    out = dev.empty(x.shape, x.dtype)
    r = dev.empty(x.shape[:-1] + (1,), x.dtype)
    if rows:
        kernel = dev.kernel(FILE, "k_rms_div", (("T", CL_TYPES[x.dtype]),),
                            [None, None, None, _I, _I, _I, NP_TYPES[x.dtype]])
        kernel(dev.queue, (rounded(rows, 16),), None, out.data, r.data, x.data, x.offset, rows,
               f, eps)
    return out, r


@hookimpl
def bias_act(x, bias, kind, slope):
    x, bias = _dense(x), _dense(bias)
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
