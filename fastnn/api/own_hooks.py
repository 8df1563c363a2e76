"""Hooks that are the core's composites run on a backend's own functions.

Where a fused hook would do no more than its composite, but the composite's calls
cost a dispatch each (and shadow mode's check of each), a backend can implement the
hook as the composite run on its own functions, called directly::

    from fastnn.api.own_hooks import product_hooks
    globals().update(product_hooks(types.SimpleNamespace(
        reshape=reshape, transpose=transpose, matmul=matmul)))

The result is one hook call where the composite makes several, computed as the
composite computes it. Each generated function takes the hook specification's
arguments by their names and is marked as an implementation, as
:func:`fastnn.api.xp_hooks.xp_hooks`'s are.
"""

from __future__ import annotations

from fastnn.api import composite, composite_attention
from fastnn.api.hookspec import hookimpl


def product_hooks(own) -> dict:
    """``linear`` and ``linear_grad_weight`` on ``own`` (``reshape``, ``transpose`` and
    ``matmul`` with the hooks' signatures): a Linear's leading axes folded into one GEMM."""

    def linear(x, weight):
        return composite.linear(own, x, weight)

    def linear_grad_weight(x, grad):
        return composite.linear_grad_weight(own, x, grad)

    return {"linear": hookimpl(linear), "linear_grad_weight": hookimpl(linear_grad_weight)}


def packed_attention_hooks(own) -> dict:
    """``attention_packed`` and ``attention_packed_backward`` on ``own`` (``slice``,
    ``reshape``, ``transpose``, ``cat``, ``attention`` and ``attention_backward`` with the
    hooks' signatures): self-attention's q, k and v taken from, and their gradients joined
    into, the one packed projection."""

    def attention_packed(qkv, mask, scale):
        return composite_attention.attention_packed(own, qkv, mask, scale)

    def attention_packed_backward(qkv, weights, grad, scale, order):
        return composite_attention.attention_packed_backward(own, qkv, weights, grad, scale,
                                                             order)

    return {"attention_packed": hookimpl(attention_packed),
            "attention_packed_backward": hookimpl(attention_packed_backward)}
