"""The attention hooks on cupy arrays: cuBLAS batched GEMMs for the three products, this
backend's row-softmax kernel for the weights, and the softmax backward as one expression
(fewer launches and temporaries than the composite).

NOTE: no fused (flash-style) kernel yet: the (..., L, S) scores are materialised.
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.fused import softmax as _softmax


def _swap(x):
    return x.swapaxes(-1, -2)


@hookimpl
def attention(q, k, v, mask, scale):
    scores = cp.matmul(q, _swap(k))
    scores *= scores.dtype.type(scale)
    if mask is not None:
        scores = cp.where(mask, scores, scores.dtype.type(-cp.inf))
    weights = _softmax(scores, scores.ndim - 1)
    return cp.matmul(weights, v), weights


@hookimpl
def attention_backward(q, k, v, weights, grad, scale):
    grad_v = cp.matmul(_swap(weights), grad)
    grad_s = cp.matmul(grad, _swap(v))  # dL/dweights, then dL/dscores in place
    grad_s -= (grad_s * weights).sum(axis=-1, keepdims=True)
    grad_s *= weights
    grad_s *= grad_s.dtype.type(scale)
    return cp.matmul(grad_s, k), cp.matmul(_swap(grad_s), q), grad_v
