"""Training-mode batch normalisation, forward and backward (``kernels/batchnorm.cl``).

x is seen as an (N, C, S) array read through its (sample, channel) strides, each (n, c)
plane of S values contiguous (a conv output's (C, N, ...) buffer needs no copy; other
views are copied once). Each pass is
three launches: per (channel, sample) partial sums over S, a per-channel combine, and one
elementwise pass. The statistics accumulate in double where the device has it (a channel
of 10^5 float32 values keeps the composite's accuracy); the forward pass combines
per-sample means and squared deviations (Chan et al.), so no E[x^2] - E[x]^2 cancellation.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, misc
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray

FILE = "batchnorm.cl"
_I = np.int32
RUN = 64  # values of a plane per work-item of the elementwise passes (batchnorm.cl)



def _planes(x: CLArray) -> tuple:
    """(x or a contiguous copy, sample stride, channel stride): each (n, c) plane contiguous."""
    rest = x.shape[2:]
    if any(n > 1 for n in rest):
        kept = [(n, s) for n, s in zip(rest, x.strides[2:]) if n > 1]
        step = 1
        for n, s in reversed(kept):
            if s != step:
                x = elementwise.copy(x)
                break
            step *= n
    s = math.prod(x.shape[2:])
    sxn = x.strides[0] if x.shape[0] > 1 else x.shape[1] * s
    sxc = x.strides[1] if x.shape[1] > 1 else s
    return x, sxn, sxc


def _setup(x: CLArray):
    """(dev, defines, accumulation dtype, N, C, S)."""
    dev = x.dev
    acc = "float64" if dev.fp64 else x.dtype
    defines = (("T", CL_TYPES[x.dtype]), ("ACC", CL_TYPES[acc]), ("RUN", RUN))
    return dev, defines, acc, x.shape[0], x.shape[1], math.prod(x.shape[2:])


@hookimpl
def batch_norm_train(x, weight, bias, eps):
    (x, sxn, sxc), weight, bias = _planes(x), misc.contiguous(weight), misc.contiguous(bias)
    dev, defines, acc, n, c, s = _setup(x)
    part = dev.empty((c, n, 2), acc)
    mean, var = dev.empty((c,), x.dtype), dev.empty((c,), x.dtype)
    stat = dev.empty((c, 2), x.dtype)
    out = dev.empty(x.shape, x.dtype)
    queue = dev.queue
    k = dev.kernel(FILE, "k_bn_partial", defines, [_I, _I, _I, None, _I, _I, _I, None])
    k(queue, (c, n), None, n, c, s, x.data, x.offset, sxn, sxc, part.data)
    k = dev.kernel(FILE, "k_bn_stats", defines, [_I, _I, _I, None, NP_TYPES[acc], None, None,
                                                 None])
    k(queue, (c,), None, n, c, s, part.data, eps, mean.data, var.data, stat.data)
    k = dev.kernel(FILE, "k_bn_apply", defines, [_I, _I, None, _I, _I, _I, None, None, _I,
                                                 None, _I, None])
    k(queue, (-(-s // RUN), c, n), None, c, s, x.data, x.offset, sxn, sxc, stat.data,
      weight.data, weight.offset, bias.data, bias.offset, out.data)
    return out, mean, var


@hookimpl
def batch_norm_backward(x, weight, mean, var, grad, eps):
    (x, sxn, sxc), (grad, sgn, sgc) = _planes(x), _planes(grad)
    weight, mean, var = misc.contiguous(weight), misc.contiguous(mean), misc.contiguous(var)
    dev, defines, acc, n, c, s = _setup(x)
    stat = dev.empty((c, 2), x.dtype)
    queue = dev.queue
    k = dev.kernel(FILE, "k_bnb_stat", defines, [_I, None, _I, None, _I, NP_TYPES[acc], None])
    k(queue, (c,), None, c, mean.data, mean.offset, var.data, var.offset, eps, stat.data)
    part = dev.empty((c, n, 2), acc)
    dweight, dbias = dev.empty((c,), x.dtype), dev.empty((c,), x.dtype)
    coef = dev.empty((c, 3), x.dtype)
    dx = dev.empty(x.shape, x.dtype)
    k = dev.kernel(FILE, "k_bnb_partial", defines,
                   [_I, _I, _I, None, _I, _I, _I, None, _I, _I, _I, None, None])
    k(queue, (c, n), None, n, c, s, x.data, x.offset, sxn, sxc, grad.data, grad.offset, sgn,
      sgc, stat.data, part.data)
    k = dev.kernel(FILE, "k_bnb_stats", defines, [_I, _I, _I, None, None, None, _I, None,
                                                  None, None])
    k(queue, (c,), None, n, c, s, part.data, stat.data, weight.data, weight.offset,
      dweight.data, dbias.data, coef.data)
    k = dev.kernel(FILE, "k_bnb_apply", defines,
                   [_I, _I, None, _I, _I, _I, None, _I, _I, _I, None, None, None])
    k(queue, (-(-s // RUN), c, n), None, c, s, x.data, x.offset, sxn, sxc, grad.data,
      grad.offset, sgn, sgc, stat.data, coef.data, dx.data)
    return dx, dweight, dbias
