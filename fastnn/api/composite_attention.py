"""The composites of the attention hooks, written with primitives (and softmax)."""

from __future__ import annotations

import math


def _swap(ops, x):
    """x with its last two axes exchanged (a view where the backend has views)."""
    n = len(x.shape)
    return ops.transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def attention_weights(ops, q, k, mask, scale):
    """softmax(q k^T * scale) along the last axis, -inf where ``mask`` is False."""
    scores = ops.mul(ops.matmul(q, _swap(ops, k)), scale)
    if mask is not None:
        scores = ops.where(mask, scores, -math.inf)
    return ops.softmax(scores, len(scores.shape) - 1)


def attention(ops, q, k, v, mask, scale):
    weights = attention_weights(ops, q, k, mask, scale)
    return ops.matmul(weights, v), weights


def attention_backward(ops, q, k, v, weights, grad, scale):
    grad_v = ops.matmul(_swap(ops, weights), grad)
    grad_w = ops.matmul(grad, _swap(ops, v))
    dot = ops.sum(ops.mul(grad_w, weights), (len(weights.shape) - 1,), True)
    grad_s = ops.mul(ops.mul(weights, ops.sub(grad_w, dot)), scale)
    return ops.matmul(grad_s, k), ops.matmul(_swap(ops, grad_s), q), grad_v


def unpack(ops, qkv):
    """(q, k, v): the three slices of ``qkv`` along its first axis, without that axis."""
    shape = tuple(qkv.shape)
    rank = len(shape)
    return tuple(ops.reshape(ops.slice(qkv, (i,) + (0,) * (rank - 1), (i + 1,) + shape[1:],
                                       (1,) * rank), shape[1:]) for i in range(3))


def attention_packed(ops, qkv, mask, scale):
    return ops.attention(*unpack(ops, qkv), mask, scale)


def attention_packed_backward(ops, qkv, weights, grad, scale, order):
    """The three gradients joined along the axis that qkv's first axis is in its storage
    (qkv is that storage transposed by ``order``), then transposed as qkv is."""
    grads = ops.attention_backward(*unpack(ops, qkv), weights, grad, scale)
    shape = (1,) + tuple(grads[0].shape)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    parts = [ops.transpose(ops.reshape(g, shape), inverse) for g in grads]
    return ops.transpose(ops.cat(parts, order[0]), order)
