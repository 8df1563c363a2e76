"""Fused hooks on one raw-kernel launch each (cu/activations.cu, softmax.cu, rms.cu, swish.cu).

The backward hooks too: bias_act_backward gives dz and the bias gradient in one
launch; softmax_cross_entropy_backward reads a broadcast (stride-0) gradient
as it is.

Kernels cover float32 and float64 on contiguous rows; other dtypes and
layouts take a cupy path with the same math (as the NumPy backend's fused.py).
Softmax over an axis other than the last moves that axis last first (one copy).
"""

from __future__ import annotations

from fastnn.api import composite, registry
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels, launch
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.primitives import gelu, leaky_relu, sigmoid, silu, softplus, tanh

_ACTIVATIONS = {"sigmoid": sigmoid, "tanh": tanh, "silu": silu, "gelu": gelu,
                "softplus": softplus}


def _rows(x, axis):
    """``x`` with ``axis`` moved last, as contiguous (rows, cols), plus how to undo it."""
    moved = cp.moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
    rows = cp.ascontiguousarray(moved)
    cols = rows.shape[-1] if rows.ndim else 1
    return rows, cols, moved.shape


def _unrows(out, axis, moved_shape, ndim):
    out = out.reshape(moved_shape)
    return cp.moveaxis(out, -1, axis) if axis != ndim - 1 else out


def _row_softmax(base, x, axis):
    rows, cols, moved_shape = _rows(x, axis)
    out = cp.empty_like(rows)
    n_rows = rows.size // cols if cols else 0
    kernels.launch_rows(base, x.dtype, x.device.id, n_rows, cols, (rows, out, cols))
    return _unrows(out, axis, moved_shape, x.ndim)


@hookimpl
def softmax(x, axis):
    if kernels.has_kernel(x.dtype):
        return _row_softmax("softmax", x, axis)
    e = cp.exp(x - cp.max(x, axis=axis, keepdims=True))
    e /= cp.sum(e, axis=axis, keepdims=True)
    return e


@hookimpl
def log_softmax(x, axis):
    if kernels.has_kernel(x.dtype):
        return _row_softmax("log_softmax", x, axis)
    shifted = x - cp.max(x, axis=axis, keepdims=True)
    shifted -= cp.log(cp.sum(cp.exp(shifted), axis=axis, keepdims=True))
    return shifted


def _xent(logits, targets, ignore_index=None, smoothing=0.0):
    """The row kernel's (loss, probs) and, with ``ignore_index``, kept (the loss
    label-smoothed by ``smoothing``): one launch."""
    n, c = logits.shape
    logits = cp.ascontiguousarray(logits)
    targets = cp.ascontiguousarray(targets.astype(cp.int64, copy=False))
    loss = cp.empty((n,), dtype=logits.dtype)
    probs = cp.empty_like(logits)
    if ignore_index is None:
        kernels.launch_rows("softmax_xent", logits.dtype, logits.device.id, n, c,
                            (logits, targets, loss, probs, c))
        return loss, probs
    kept = cp.empty((n,), dtype=logits.dtype)
    kernels.launch_rows("softmax_xent_ignore", logits.dtype, logits.device.id, n, c,
                        (logits, targets, loss, probs, c, kept, int(ignore_index),
                         float(smoothing)))
    return loss, probs, kept


@hookimpl
def softmax_cross_entropy(logits, targets):
    if kernels.has_kernel(logits.dtype):
        return _xent(logits, targets)
    n, c = logits.shape
    shifted = logits - cp.max(logits, axis=1, keepdims=True)
    probs = cp.exp(shifted)
    total = cp.sum(probs, axis=1, keepdims=True)
    probs /= total
    # NOTE: clip the gather index so a bad target cannot read out of bounds; its loss is NaN.
    valid = (targets >= 0) & (targets < c)
    picked = cp.take_along_axis(shifted, cp.clip(targets, 0, c - 1)[:, None], axis=1)[:, 0]
    loss = cp.log(total[:, 0]) - picked
    return cp.where(valid, loss, cp.nan).astype(logits.dtype, copy=False), probs


@hookimpl
def cross_entropy_loss(logits, targets, ignore_index, reduction, label_smoothing):
    if not kernels.has_kernel(logits.dtype):
        return composite.cross_entropy_loss(_own_hooks(), logits, targets, ignore_index,
                                            reduction, label_smoothing)
    loss, probs, kept = _xent(logits, targets, ignore_index, label_smoothing)
    if reduction == "none":
        return loss, probs, None
    total = cp.sum(kept)
    loss = cp.sum(loss)
    return (loss / total if reduction == "mean" else loss), probs, total


@hookimpl
def rms_div(x, eps):
    if kernels.has_kernel(x.dtype) and x.shape[-1] == 0:
        # NOTE: no launch covers an empty row, so r would stay uninitialised memory;
        # the mean over an empty axis is NaN (0 / 0), as in NumPy.
        return cp.empty_like(x), cp.full(x.shape[:-1] + (1,), cp.nan, dtype=x.dtype)
    if kernels.has_kernel(x.dtype):
        rows, cols, _ = _rows(x, x.ndim - 1)
        n_rows = rows.size // cols if cols else 0
        out = cp.empty_like(rows)
        r = cp.empty(x.shape[:-1] + (1,), dtype=x.dtype)
        kernels.launch_rows("rms_div", x.dtype, x.device.id, n_rows, cols,
                            (rows, out, r, cols, float(eps)))
        return out, r
    r = cp.mean(cp.square(x), axis=-1, keepdims=True)
    r += eps
    r = 1.0 / cp.sqrt(r)
    return x * r, r


@hookimpl
def bias_act(x, bias, kind, slope):
    if kernels.has_kernel(x.dtype) and x.size:
        x = cp.ascontiguousarray(x)
        bias = cp.ascontiguousarray(bias)
        out = cp.empty_like(x)
        features = bias.shape[0]
        rows = x.size // features
        args = (x, bias, out, rows, features, kernels.ACTIVATION_CODES[kind], float(slope))
        kernels.launch_planes("bias_act", x.dtype, x.device.id, features, rows, 1, args)
        return out
    z = cp.add(x, bias)
    if kind == "relu":  # (a select: NaN and -0.0 kept, as PyTorch)
        return cp.where(z < 0, z.dtype.type(0), z)
    if kind == "identity":
        return z
    if kind == "leaky_relu":
        return leaky_relu(z, slope)
    return _ACTIVATIONS[kind](z)


def _own_hooks():
    """This backend's hooks as an ops table (the names of its hook modules), so that the
    core's composites serve the cases the backward kernels do not take. Built per call:
    only those rare cases pay, and a test's patched hook is seen."""
    import fastnn_cuda

    return registry.hook_namespace(fastnn_cuda)


@hookimpl
def bias_act_backward(x, bias, out, grad, kind, slope):
    features = bias.shape[0]
    rows = x.size // features if features else 0
    same = grad.dtype == x.dtype and out.dtype == x.dtype and bias.dtype == x.dtype
    if kernels.has_kernel(x.dtype) and same and x.size and rows <= launch.COLUMN_ROWS_MAX:
        x, bias = cp.ascontiguousarray(x), cp.ascontiguousarray(bias)
        out, grad = cp.ascontiguousarray(out), cp.ascontiguousarray(grad)
        dz = cp.empty_like(x)
        dbias = cp.empty_like(bias)
        args = (x, bias, out, grad, dz, dbias, rows, features,
                kernels.ACTIVATION_CODES[kind], float(slope))
        kernels.launch_columns("bias_act_backward", x.dtype, x.device.id, features, args)
        return dz, dbias
    return composite.bias_act_backward(_own_hooks(), x, bias, out, grad, kind, slope)


def _xent_backward(probs, targets, grad, ignore_index=None, smoothing=0.0):
    """One plane launch, or None where the kernel does not take these arrays."""
    if not probs.size:
        return cp.empty_like(probs)
    if not (kernels.has_kernel(probs.dtype) and grad.dtype == probs.dtype):
        return None
    c = probs.shape[1]
    probs = cp.ascontiguousarray(probs)
    targets = cp.ascontiguousarray(targets.astype(cp.int64, copy=False))
    # a broadcast scalar (the mean's gradient) keeps its stride 0: no copy
    stride = grad.strides[0] // grad.itemsize if grad.ndim else 0
    out = cp.empty_like(probs)
    rows = probs.shape[0]
    args = (probs, targets, grad, stride, out, rows, c)
    base = "softmax_xent_backward"
    if ignore_index is not None:
        args = args + (int(ignore_index), float(smoothing))
        base = "softmax_xent_ignore_backward"
    kernels.launch_planes(base, probs.dtype, probs.device.id, c, rows, 1, args)
    return out


@hookimpl
def softmax_cross_entropy_backward(probs, targets, grad):
    out = _xent_backward(probs, targets, grad)
    if out is not None:
        return out
    return composite.softmax_cross_entropy_backward(_own_hooks(), probs, targets, grad)


@hookimpl
def cross_entropy_loss_backward(probs, targets, grad, ignore_index, reduction, label_smoothing,
                                total):
    if kernels.has_kernel(probs.dtype) and grad.dtype == probs.dtype:
        if reduction == "mean":
            grad = grad / total  # 0-d: the kernel reads it with stride 0
        return _xent_backward(probs, targets, grad, ignore_index, label_smoothing)
    return composite.cross_entropy_loss_backward(_own_hooks(), probs, targets, grad,
                                                 ignore_index, reduction, label_smoothing, total)


# ---------------------------------------------------------------- swish (no hook yet)


def swish(x, beta):
    """x * sigmoid(beta * x) with ``beta`` (features,) along the last axis, one launch.

    Not a hook of the specification yet (the core composes Swish from
    primitives); kept here, tested, for when a ``swish`` fused hook lands.
    """
    if not kernels.has_kernel(x.dtype):
        return x * sigmoid(beta * x)
    x, beta = cp.ascontiguousarray(x), cp.ascontiguousarray(beta)
    out = cp.empty_like(x)
    features = beta.shape[0]
    rows = x.size // features if features else 0
    kernels.launch_planes("swish_forward", x.dtype, x.device.id, features, rows, 1,
                          (x, beta, out, rows, features))
    return out


def swish_backward(grad_out, x, beta):
    """(grad_x, grad_beta) of :func:`swish` for the upstream gradient ``grad_out``."""
    if not kernels.has_kernel(x.dtype):
        s = sigmoid(beta * x)
        ds = s * (1.0 - s)
        grad_beta = (grad_out * x * x * ds).reshape(-1, beta.shape[0]).sum(axis=0)
        return grad_out * (s + beta * x * ds), grad_beta
    grad_out, x = cp.ascontiguousarray(grad_out), cp.ascontiguousarray(x)
    beta = cp.ascontiguousarray(beta)
    grad_x = cp.empty_like(x)
    terms = cp.empty_like(x)
    features = beta.shape[0]
    rows = x.size // features if features else 0
    kernels.launch_planes("swish_backward", x.dtype, x.device.id, features, rows, 1,
                          (grad_out, x, beta, grad_x, terms, rows, features))
    return grad_x, terms.reshape(-1, beta.shape[0]).sum(axis=0)
