"""The attention hooks on cupy arrays: cuBLAS batched GEMMs for the three products, and
between them one row kernel each way (cu/attention.cu): the scale, the mask and the
softmax of the scores in one launch forward, the softmax backward (with the scale) in one
launch backward, both in place on the fresh GEMM output. float32/float64 take the kernels;
other dtypes the same math in cupy calls.

NOTE: no fused (flash-style) kernel yet: the (..., L, S) scores are materialised.
"""

from __future__ import annotations

import math
import types

from fastnn.api.hookspec import hookimpl
from fastnn.api.own_hooks import packed_attention_hooks
from fastnn_cuda import gemm, indexing, kernels, primitives
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.fused import softmax as _softmax


def _swap(x):
    return x.swapaxes(-1, -2)


def _kernel_dtype(*arrays) -> bool:
    dtype = arrays[0].dtype
    return kernels.has_kernel(dtype) and all(a.dtype == dtype for a in arrays)


def mask_rows(mask, shape):
    """(mask as contiguous bool rows, how many rows it has) for the kernel, which reads
    row r % that count: a mask that varies over the last two axes only (the causal one)
    stays one (L, S) plane; any other is broadcast to the scores' full shape."""
    length, cols = shape[-2:]
    mask = cp.asarray(mask).astype(cp.bool_, copy=False)
    if all(d == 1 for d in mask.shape[:-2]):
        plane = mask.reshape(mask.shape[-2:]) if mask.ndim > 2 else mask
        return cp.ascontiguousarray(cp.broadcast_to(plane, (length, cols))), length
    return cp.ascontiguousarray(cp.broadcast_to(mask, shape)), math.prod(shape[:-1])


@hookimpl
def attention(q, k, v, mask, scale):
    scores = cp.ascontiguousarray(gemm.matmul(cp, q, _swap(k)))  # fresh: no copy
    if _kernel_dtype(q, k, v) and scores.size:
        cols = scores.shape[-1]
        keep, period = mask_rows(mask, scores.shape) if mask is not None else (0, 1)
        kernels.launch_rows("attention_softmax", scores.dtype, scores.device.id,
                            scores.size // cols, cols, (scores, cols, float(scale), keep, period))
        return gemm.matmul(cp, scores, v), scores
    scores *= scores.dtype.type(scale)
    if mask is not None:
        scores = cp.where(mask, scores, scores.dtype.type(-cp.inf))
    weights = _softmax(scores, scores.ndim - 1)
    return gemm.matmul(cp, weights, v), weights


@hookimpl
def attention_backward(q, k, v, weights, grad, scale):
    grad_v = gemm.matmul(cp, _swap(weights), grad)
    grad_s = cp.ascontiguousarray(gemm.matmul(cp, grad, _swap(v)))  # dL/dweights, then dL/dscores
    if _kernel_dtype(weights, grad_s) and grad_s.size:
        cols = grad_s.shape[-1]
        kernels.launch_rows("attention_softmax_backward", grad_s.dtype, grad_s.device.id,
                            grad_s.size // cols, cols,
                            (cp.ascontiguousarray(weights), grad_s, cols, float(scale)))
    else:
        grad_s -= (grad_s * weights).sum(axis=-1, keepdims=True)
        grad_s *= weights
        grad_s *= grad_s.dtype.type(scale)
    return gemm.matmul(cp, grad_s, k), gemm.matmul(cp, _swap(grad_s), q), grad_v


# attention_packed and its backward: the composites on this backend's own views, cat and
# the hooks above (self-attention's q, k, v out of, and their gradients into, one array)
globals().update(packed_attention_hooks(types.SimpleNamespace(
    slice=indexing.slice, reshape=primitives.reshape,
    transpose=primitives.transpose,
    cat=indexing.cat, attention=attention, attention_backward=attention_backward)))
