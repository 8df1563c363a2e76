"""Fused fast paths for the NumPy backend: fewer temporaries than the composites."""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_cpu import bitmask, native
from fastnn_cpu.scratch import FEW_ROWS, row_sums

# NOTE: ufunc.reduce, not np.max / np.sum (their wrappers cost ~1.5 us a call), and the
# passes after the first in place: a 4x4 softmax was 11x PyTorch's host time.
_MAX, _SUM = np.maximum.reduce, np.add.reduce
#: Longest rows whose maxima and sums take the C row maximum and a BLAS product with ones
#: (NumPy's reductions pay their loop's set-up a row: (1024, 64) float32's maxima took 110
#: us, its sums 33, against a few each); longer rows reduce well in NumPy.
SHORT_ROWS = 512


def _last(x, axis) -> bool:
    """Whether ``axis`` is x's last, x a C-contiguous float array of at least
    :data:`~fastnn_cpu.scratch.FEW_ROWS` short rows of 2 or more values (the layouts
    _row_max takes)."""
    return (axis in (-1, x.ndim - 1) and x.ndim > 1 and 1 < x.shape[-1] <= SHORT_ROWS
            and x.size >= FEW_ROWS * x.shape[-1] and native.dense(x))


def _row_max(x, axis):
    """np.maximum.reduce(x, axis, keepdims=True), NaN kept, many short last-axis rows in
    C."""
    lib = native.act_library() if _last(x, axis) else None
    if lib is None:
        return _MAX(x, axis=axis, keepdims=True)
    out = np.empty(x.shape[:-1] + (1,), x.dtype)
    lib.row_max[x.dtype.char](x.size // x.shape[-1], x.shape[-1], native.address(x),
                              native.address(out))
    return out


def _row_sum(x, axis):
    """np.add.reduce(x, axis, keepdims=True), short last-axis rows as one BLAS product with
    ones (:func:`fastnn_cpu.scratch.row_sums`, as layer norm's)."""
    if axis in (-1, x.ndim - 1):
        return row_sums(x, SHORT_ROWS)
    return _SUM(x, axis=axis, keepdims=True)


def _c_rows(x, axis, stats: bool = False):
    """The softmax along x's last axis in one C call (native_act.c), x a C-contiguous
    float32 array with rows of at least one value: the output, or (output, each row's
    maximum, each row's sum) with ``stats``; None where C does not take x."""
    if (x.dtype.char != "f" or axis not in (-1, x.ndim - 1) or not x.ndim or not x.size
            or not x.flags.c_contiguous):
        return None
    lib = native.act_library()
    if lib is None:
        return None
    d = x.shape[-1]
    out = np.empty_like(x)
    a = native.address
    if not stats:
        lib.softmax_rows_f32(x.size // d, d, a(x), a(out), None, None)
        return out
    top, total = np.empty(x.size // d, np.float32), np.empty(x.size // d, np.float32)
    lib.softmax_rows_f32(x.size // d, d, a(x), a(out), a(top), a(total))
    return out, top, total


#: Largest array whose softmax along another axis than the last is taken as the C row
#: softmax of a contiguous copy with that axis last (the copy costs less than NumPy's
#: five calls up to about this size)
_SWAP_BELOW = 1 << 12


@hookimpl
def softmax(x, axis):
    out = _c_rows(x, axis)
    if out is not None:
        return out
    if x.dtype.char == "f" and x.ndim > 1 and 0 < x.size <= _SWAP_BELOW:
        out = _c_rows(np.ascontiguousarray(x.swapaxes(axis, -1)), -1)
        if out is not None:
            return out.swapaxes(axis, -1)
    e = np.subtract(x, _row_max(x, axis))
    np.exp(e, out=e)
    e /= _row_sum(e, axis)
    return e


@hookimpl
def log_softmax(x, axis):
    shifted = np.subtract(x, _row_max(x, axis))
    total = _row_sum(np.exp(shifted), axis)
    shifted -= np.log(total, out=total)
    return shifted


@hookimpl
def softmax_cross_entropy(logits, targets):
    found = _c_rows(logits, 1, stats=True)
    rows = np.arange(logits.shape[0])
    if found is not None:  # log(sum) - (x[target] - max), as below without the shifted copy
        probs, top, total = found
        picked = logits[rows, targets]
        picked -= top
        return np.log(total) - picked, probs
    shifted = logits - _row_max(logits, 1)
    probs = np.exp(shifted)
    total = _row_sum(probs, 1)
    probs /= total
    loss = np.log(total[:, 0]) - shifted[rows, targets]
    return loss, probs


def _kept_rows(targets, ignore_index, classes):
    """(bool per row: target != ignore_index, the targets to read, which rows are kept
    with a target outside [0, classes) or None): a bad target is never an index."""
    keep = targets != ignore_index
    safe = np.where(keep, targets, 0)
    bad = (safe < 0) | (safe >= classes)
    if bad.any():
        safe[bad] = 0
        return keep, safe, bad
    return keep, safe, None


@hookimpl
def cross_entropy_loss(logits, targets, ignore_index, reduction, label_smoothing):
    keep, safe, bad = _kept_rows(targets, ignore_index, logits.shape[1])
    loss, probs = softmax_cross_entropy(logits, safe)
    if label_smoothing:  # (1 - s) nll + s / C * sum_c (-log p_c)
        spread = _SUM(log_softmax(logits, 1), axis=1)
        spread *= -label_smoothing / logits.shape[1]
        loss = loss * (1.0 - label_smoothing) + spread
    loss = np.where(keep, loss, 0).astype(logits.dtype, copy=False)
    if bad is not None:
        loss[bad] = np.nan
    if reduction == "none":
        return loss, probs, None
    total = np.asarray(np.count_nonzero(keep), logits.dtype)
    loss = _SUM(loss, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):  # every row ignored: NaN
        return np.asarray(loss / total if reduction == "mean" else loss), probs, total


@hookimpl
def rms_div(x, eps):
    r = np.mean(np.square(x), axis=-1, keepdims=True)
    r += eps
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    return x * r, r


@hookimpl
def bias_act(x, bias, kind, slope):
    if kind in ("relu", "identity") and x.ndim and bias.shape == x.shape[-1:]:
        lib = native.act_for(x, bias)
        if lib is not None:  # one pass (native_act.c), NumPy's values bit for bit
            out = np.empty_like(x)
            cols = x.shape[-1]
            a = native.address
            lib.bias_act[x.dtype.char](x.size // cols, cols, a(x), a(bias), a(out),
                                       int(kind == "relu"))
            return out
    z = np.add(x, bias)
    if kind == "relu":
        return np.maximum(z.dtype.type(0), z, out=z)  # (zero first: relu(-0.0) = -0.0)
    if kind == "identity":
        return z
    from fastnn_cpu import gelu, leaky_relu, sigmoid, silu, softplus, tanh

    table = {"sigmoid": sigmoid, "tanh": tanh, "silu": silu, "gelu": gelu, "softplus": softplus}
    if kind == "leaky_relu":
        return leaky_relu(z, slope)
    return table[kind](z)


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: Below this |x| (zeros, subnormals), out / x loses the cdf, which is 0.5 there.
_GELU_TINY = 1e-30


@hookimpl
def relu_backward(out, grad):
    """grad kept where out != 0 (NaN included), through the where hook's bit mask
    (fastnn_cpu.bitmask): one comparison and the mask, where the composite compares twice
    (out == 0, then its negation) before the same select."""
    grad = np.asarray(grad)
    if grad.dtype != out.dtype:
        grad = grad.astype(out.dtype)
    if grad.shape == out.shape:
        lib = native.act_for(out, grad)
        if lib is not None:  # one pass (native_act.c) where NumPy makes four
            dz = np.empty_like(out)
            a = native.address
            lib.relu_backward[out.dtype.char](out.size, a(out), a(grad), a(dz))
            return dz
    return bitmask.select(np.asarray(np.not_equal(out, 0)), grad)  # (0-d: an array too)


@hookimpl
def gelu_backward(x, out, grad):
    """grad * (cdf + x * pdf), with cdf recovered as out / x (out = x * cdf, so to ~1 ulp)
    instead of a second erf: 9 passes where the composite made ~40 (erf's own 18). Whether
    some |x| is tiny is read off x**2, the pdf's first pass, by its minimum (one pass,
    where |x| < TINY took three: 0.78 -> 0.65 ms on nanoGPT's (16, 64, 256) float32).

    NOTE: where out underflows (x below about -13 in float32) out / x is 0 against a true
    cdf under 1e-38, and where x is +-inf it is NaN, as the composite's 0 * inf is. In
    float32 TINY**2 underflows to 0, so the cdf is set to 0.5 for every |x| whose square
    does (below about 2.6e-23, where out / x is 0.5 anyway)."""
    if x.dtype not in (np.float32, np.float64):  # float16: the composite's passes
        from fastnn_cpu import erf

        cdf = (erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
        return np.asarray(grad * (cdf + x * (np.exp((x * x) * -0.5) * _INV_SQRT_2PI)))
    tiny2 = x.dtype.type(_GELU_TINY) ** 2
    lib = native.act_for(x, out, grad) if x.dtype == np.float32 else None
    if lib is not None:  # these steps in one C pass (native_act.c)
        d = np.empty_like(x)
        a = native.address
        lib.gelu_backward_f32(x.size, a(x), a(out), a(grad), float(tiny2), _INV_SQRT_2PI,
                              a(d))
        return d
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        # out= arrays: on 0-d operands a ufunc returns a scalar, which cannot be an out=
        pdf = np.multiply(x, x, out=np.empty(x.shape, x.dtype))
        # (fmin: a NaN elsewhere must not hide a tiny |x|)
        tiny = pdf <= tiny2 if x.size and np.fmin.reduce(pdf, axis=None) <= tiny2 else None
        pdf *= -0.5
        np.exp(pdf, out=pdf)
        pdf *= x
        pdf *= x.dtype.type(_INV_SQRT_2PI)
        d = np.divide(out, x, out=np.empty(x.shape, x.dtype))
    if tiny is not None:
        np.copyto(d, 0.5, where=tiny)
    d += pdf
    d *= grad
    return d


@hookimpl
def softmax_cross_entropy_backward(probs, targets, grad):
    out = probs.copy()
    out[np.arange(probs.shape[0]), targets] -= 1
    out *= grad[:, None]
    return out


@hookimpl
def cross_entropy_loss_backward(probs, targets, grad, ignore_index, reduction, label_smoothing,
                                total):
    keep, safe, bad = _kept_rows(targets, ignore_index, probs.shape[1])
    if reduction == "mean":
        grad = grad / total
    grad = np.where(keep, grad, 0)
    if label_smoothing:  # (p - (1 - s) one_hot - s / C) g
        out = probs - label_smoothing / probs.shape[1]
        out[np.arange(probs.shape[0]), safe] -= 1.0 - label_smoothing
        out *= grad[:, None]
    else:
        out = softmax_cross_entropy_backward(probs, safe, grad)
    if bad is not None:
        out[bad] = np.nan
    return out


@hookimpl
def sgd_step(params, grads, bufs, lrs, weight_decays, momentum, dampening, nesterov, first_step):
    out_bufs = []
    for p, g, buf, lr, wd in zip(params, grads, bufs, lrs, weight_decays):
        if wd:
            g = g + wd * p
        if momentum:
            if first_step or buf is None:
                buf = np.array(g, copy=True)
            else:
                buf *= momentum
                if dampening:
                    _axpy(1.0 - dampening, g, buf)
                else:  # in place, no temporary the size of the parameter
                    np.add(buf, g, out=buf, casting="unsafe")
            g = g + momentum * buf if nesterov else buf
        _axpy(-lr, g, p)
        out_bufs.append(buf)
    return list(params), out_bufs


try:  # BLAS axpy updates in place in one pass, with no temporary the size of the parameter
    from scipy.linalg import blas as _blas

    _AXPY = {np.dtype(np.float32): _blas.saxpy, np.dtype(np.float64): _blas.daxpy}
except ImportError:  # pragma: no cover - scipy is optional
    _AXPY = {}


def _axpy(alpha, x, y):
    """y += alpha * x, in place."""
    axpy = _AXPY.get(y.dtype)
    # BLAS rejects length-0 vectors (f2py's offx < len(x) check): those take the NumPy path
    if (axpy is not None and y.size and x.dtype == y.dtype and y.flags.c_contiguous
            and x.flags.c_contiguous):
        axpy(x.reshape(-1), y.reshape(-1), a=alpha)
    else:
        y += alpha * x


@hookimpl
def adam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
              step, decoupled):
    bias1 = 1.0 - beta1**step
    root2 = math.sqrt(1.0 - beta2**step)
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        if wd and decoupled:
            p *= 1.0 - lr * wd
        elif wd:
            g = g + wd * p
        # one scratch array per parameter, every other pass in place (as PyTorch's foreach)
        # NOTE: asarray: on 0-d inputs a ufunc returns a scalar, which cannot be an out=
        scratch = np.asarray(np.multiply(g, 1.0 - beta1, dtype=p.dtype))
        m *= beta1
        m += scratch
        np.square(g, out=scratch, casting="unsafe")
        scratch *= 1.0 - beta2
        v *= beta2
        v += scratch
        # m / (sqrt(v / bias2) + eps) = sqrt(bias2) * m / (sqrt(v) + eps sqrt(bias2)): one
        # pass fewer than scaling sqrt(v) first
        np.sqrt(v, out=scratch)
        scratch += eps * root2
        np.divide(m, scratch, out=scratch)
        _axpy(-lr * root2 / bias1, scratch, p)
    return list(params), list(exp_avgs), list(exp_avg_sqs)


@hookimpl
def rmsprop_step(params, grads, square_avgs, lrs, weight_decays, alpha, eps):
    for p, g, v, lr, wd in zip(params, grads, square_avgs, lrs, weight_decays):
        if wd:
            g = g + wd * p
        v *= alpha
        v += (1.0 - alpha) * np.square(g)
        denom = np.sqrt(v)
        denom += eps
        p -= lr * g / denom
    return list(params), list(square_avgs)
