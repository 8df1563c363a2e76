"""Backward rules of the scans (cumsum, prod) and the newer math primitives (floor, sign,
sin, cos), written with primitives. :mod:`fastnn.autograd.rules` merges :data:`RULES`
into its own table.
"""

from __future__ import annotations

import math

from fastnn.autograd.rule_table import rule_into
from fastnn.autograd.rules_indexing import _expand, zeros

RULES: dict = {}  # merged into fastnn.autograd.rules.RULES
rule = rule_into(RULES)


@rule("cumsum")
def _cumsum(ops, node, grad):
    axis = node.attrs
    # the reversed running sum: sum(g) - cumsum(g) + g
    total = ops.sum(grad, (axis,), True)
    return (ops.add(ops.sub(total, ops.cumsum(grad, axis)), grad),)


@rule("prod")
def _prod(ops, node, grad):
    """d prod / d x_i = prod of the others: out / x_i without zeros; with one zero, the
    product of the rest at that zero and 0 elsewhere; with two or more zeros, 0."""
    x, out = node.saved
    shape, axis, keepdims = node.attrs
    if not math.prod(shape):
        return (x,)  # an empty gradient of x's shape and dtype
    axes = tuple(range(len(shape))) if axis is None else axis
    out = _expand(ops, out, shape, axis, keepdims)
    grad = _expand(ops, grad, shape, axis, keepdims)
    is_zero = ops.equal(x, 0.0)
    zero = zeros(ops, (), x)
    one = ops.add(zero, 1.0)
    zeros_count = ops.sum(ops.where(is_zero, one, zero), axes, True)
    nonzero = ops.where(is_zero, one, x)
    others = ops.prod(nonzero, axes, True)
    plain = ops.div(out, nonzero)
    one_zero = ops.where(is_zero, others, zero)
    local = ops.where(ops.equal(zeros_count, 0.0), plain,
                      ops.where(ops.equal(zeros_count, 1.0), one_zero, zero))
    return (ops.mul(local, grad),)


def _swap_last(rank: int) -> tuple:
    return tuple(range(rank - 2)) + (rank - 1, rank - 2)


@rule("linalg_solve")
def _linalg_solve(ops, node, grad):
    """X = A^-1 B: dB = A^-T G (one more solve, with A^T), dA = -dB X^T."""
    a, x = node.saved
    swap = _swap_last(len(a.shape))
    grad_b, _ = ops.linalg_solve(ops.transpose(a, swap), grad)
    grad_a = ops.neg(ops.matmul(grad_b, ops.transpose(x, swap))) if node.needs[0] else None
    return grad_a, grad_b if node.needs[1] else None


@rule("linalg_slogdet")
def _linalg_slogdet(ops, node, grad):
    """d logabsdet / dA = A^-T: the solve of A^T against the saved identity, times G.

    NOTE: where G is exactly 0 the gradient is 0 even if A is singular (A^-T is inf/nan
    there): det = sign * exp(logabsdet) sends G = 0 for a singular matrix, whose det
    gradient is then 0, as PyTorch's. Only the entries that are not finite are masked:
    a mask on G alone made the result constant in G at G = 0, so a derivative with
    respect to G there (jvp's double-vjp trick, whose G is zeros) was 0."""
    a, identity = node.saved
    inverse_t, _ = ops.linalg_solve(ops.transpose(a, _swap_last(len(a.shape))), identity)
    grad = ops.reshape(grad, tuple(grad.shape) + (1, 1))
    finite = ops.less(ops.abs(inverse_t), math.inf)  # (False at NaN too)
    safe = ops.where(finite, inverse_t, ops.where(ops.equal(grad, 0.0), grad, inverse_t))
    return (ops.mul(safe, grad),)


@rule("floor")
def _floor(ops, node, grad):
    return (_zeros_like(ops, grad),)  # 0 almost everywhere, as PyTorch


@rule("sign")
def _sign(ops, node, grad):
    return (_zeros_like(ops, grad),)  # 0 almost everywhere, as PyTorch


def _zeros_like(ops, grad):
    """+0.0 in grad's shape, as PyTorch's zeros_like: not grad * 0, which is NaN where grad
    is inf or NaN (a root or log at 0 after a sign, as in lp_pool) and -0.0 where grad is
    negative. (An empty grad is its own zeros.)"""
    shape = tuple(grad.shape)
    return zeros(ops, shape, grad) if math.prod(shape) else grad


@rule("sin")
def _sin(ops, node, grad):
    return (ops.mul(grad, ops.cos(node.saved[0])),)


@rule("cos")
def _cos(ops, node, grad):
    return (ops.neg(ops.mul(grad, ops.sin(node.saved[0]))),)
