"""Backward rules: one per differentiable primitive (and fused op), written with primitives.

A rule is ``rule(ops, node, grad_out) -> tuple`` with one entry per input of
the node (None where no gradient flows). ``node.saved`` holds the arrays the
forward pass kept, ``node.attrs`` its non-array arguments, ``node.needs`` which
inputs want a gradient. The engine reduces broadcast gradients afterwards, so
a rule may return a gradient shaped like the output.
"""

from __future__ import annotations

import math

from fastnn.api import hookspec
from fastnn.api.composite import activation_grad
from fastnn.autograd.rule_table import rule_into
from fastnn.autograd.rules_attention import RULES as ATTENTION_RULES
from fastnn.autograd.rules_conv import RULES as CONV_RULES
from fastnn.autograd.rules_custom import RULES as CUSTOM_RULES
from fastnn.autograd.rules_indexing import RULES as INDEXING_RULES
from fastnn.autograd.rules_math import RULES as MATH_RULES
from fastnn.autograd.rules_pool import RULES as POOL_RULES
from fastnn.autograd.rules_recurrent import RULES as RECURRENT_RULES

RULES: dict = {}
"""Op name -> its backward rule ``rule(ops, node, grad_out)``, one gradient per input."""
rule = rule_into(RULES)
_SQRT_2_OVER_PI = 2.0 / math.sqrt(math.pi)


# ---------------------------------------------------------------- activations


def _activation_rule(kind):
    def backward(ops, node, grad):
        z, out = node.saved
        slope = node.attrs or 0.0
        return (activation_grad(ops, kind, z, out, grad, slope),)

    return backward


for _kind in hookspec.ACTIVATION_HOOKS:
    RULES[_kind] = _activation_rule(_kind)


@rule("gelu")
def _gelu(ops, node, grad):
    z, out = node.saved
    return (ops.gelu_backward(z, out, grad),)


@rule("bias_act")
def _bias_act(ops, node, grad):
    kind, slope = node.attrs
    if kind == "identity":  # saved nothing (see activations.saved_by_bias_act); the engine
        return grad, grad  # sums the bias's gradient over the leading axes
    x, bias, out = node.saved
    return ops.bias_act_backward(x, bias, out, grad, kind, slope)


# ---------------------------------------------------------------- elementwise math


@rule("neg")
def _neg(ops, node, grad):
    return (ops.neg(grad),)


@rule("exp")
def _exp(ops, node, grad):
    return (ops.mul(grad, node.saved[0]),)


@rule("log")
def _log(ops, node, grad):
    return (ops.div(grad, node.saved[0]),)


@rule("sqrt")
def _sqrt(ops, node, grad):
    return (ops.div(grad, ops.mul(node.saved[0], 2.0)),)


@rule("abs")
def _abs(ops, node, grad):
    x = node.saved[0]
    # NOTE: 0 at NaN, as PyTorch (its sign(nan) is 0): an l1_loss over a NaN prediction
    # leaves the other gradients finite (and the NaN in the loss says what happened)
    return (ops.mul(grad, ops.where(ops.equal(x, x), ops.sign(x), 0.0)),)


@rule("erf")
def _erf(ops, node, grad):
    (x,) = node.saved
    return (ops.mul(grad, ops.mul(ops.exp(ops.neg(ops.mul(x, x))), _SQRT_2_OVER_PI)),)


@rule("add")
def _add(ops, node, grad):
    return grad, grad


@rule("sub")
def _sub(ops, node, grad):
    return grad, (ops.neg(grad) if node.needs[1] else None)


@rule("mul")
def _mul(ops, node, grad):
    a, b = node.saved
    return (ops.mul(grad, b) if node.needs[0] else None,
            ops.mul(grad, a) if node.needs[1] else None)


@rule("div")
def _div(ops, node, grad):
    a, b = node.saved  # (a: None unless b needs its gradient)
    grad_a = ops.div(grad, b)
    return grad_a, (ops.neg(ops.mul(grad_a, ops.div(a, b))) if node.needs[1] else None)


@rule("pow")
def _pow(ops, node, grad):
    a, b, out = node.saved
    grad_a = grad_b = None
    if node.needs[0]:
        # NOTE: where b = 0 the exponent b - 1 becomes 0, so that b * a**(b-1) is 0 * 1 = 0
        # (a**0 is constant, as in PyTorch), not 0 * 0**-1 = NaN at a = 0
        if _is_array(b):
            exponent = ops.where(ops.equal(b, 0.0), b, ops.sub(b, 1.0))
        else:
            exponent = b - 1.0 if b != 0 else 0.0
        grad_a = ops.mul(grad, ops.mul(ops.pow(a, exponent), b))
    if node.needs[1]:
        # d(a^b)/db = a^b log a; at a = 0 with b >= 0 PyTorch takes 0 (not 0 * -inf = NaN)
        d = ops.mul(out, ops.log(a))
        grad_b = ops.mul(grad, ops.where(ops.equal(a, 0.0), ops.where(ops.less(b, 0.0), d, 0.0), d))
    return grad_a, grad_b


def _is_array(value) -> bool:
    return hasattr(value, "shape")


def _select_rule(compare):
    def backward(ops, node, grad):
        a, b = node.saved
        wins = compare(ops)(a, b)
        ties = ops.equal(a, b)
        half = ops.mul(grad, 0.5)
        grad_a = ops.where(wins, grad, ops.where(ties, half, 0.0))
        return grad_a, (ops.sub(grad, grad_a) if node.needs[1] else None)

    return backward


RULES["maximum"] = _select_rule(lambda ops: ops.greater)
RULES["minimum"] = _select_rule(lambda ops: ops.less)


@rule("where")
def _where(ops, node, grad):
    (cond,) = node.saved
    grad_a = ops.where(cond, grad, 0.0) if node.needs[1] else None
    # (b's is a select too, not grad - grad_a: that is NaN where cond holds and the
    # gradient is inf or NaN there; PyTorch's is 0)
    grad_b = ops.where(ops.equal(cond, 0), grad, 0.0) if node.needs[2] else None
    return None, grad_a, grad_b


@rule("transfer")
def _transfer(ops, node, grad):
    source = node.attrs  # the Device the input lives on
    return (source.ops.from_numpy(ops.to_numpy(grad), source.index),)


@rule("astype")
def _astype(ops, node, grad):
    return (ops.astype(grad, node.attrs),)


# ---------------------------------------------------------------- reductions and shapes


def _expand(ops, grad, shape, axis, keepdims):
    """Reshape a reduced gradient so that it broadcasts against ``shape`` (no call where
    it does as it is: the reduced axes were the leading ones, as a full reduction's, a
    loss's, are; every caller broadcasts it)."""
    if not keepdims:
        axes = range(len(shape)) if axis is None else axis
        if sorted(axes) == list(range(len(axes))):
            return grad
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        grad = ops.reshape(grad, tuple(kept))
    return grad


@rule("sum")
def _sum(ops, node, grad):
    shape, axis, keepdims = node.attrs
    return (ops.broadcast_to(_expand(ops, grad, shape, axis, keepdims), shape),)


@rule("mean")
def _mean(ops, node, grad):
    shape, axis, keepdims = node.attrs
    count = math.prod(shape[a] for a in (range(len(shape)) if axis is None else axis))
    grad = ops.mul(_expand(ops, grad, shape, axis, keepdims), 1.0 / max(count, 1))
    return (ops.broadcast_to(grad, shape),)


@rule("max")
def _max(ops, node, grad):
    (x, out) = node.saved
    shape, axis, keepdims, dtype = node.attrs
    out = _expand(ops, out, shape, axis, keepdims)
    grad = _expand(ops, grad, shape, axis, keepdims)
    # NOTE: ties share the gradient evenly, as PyTorch's amax does.
    mask = ops.astype(ops.equal(x, out), dtype)
    count = ops.sum(mask, tuple(range(len(shape))) if axis is None else axis, True)
    return (ops.mul(ops.div(mask, count), grad),)


@rule("evenly")
def _evenly(ops, node, grad):
    """A 0-d value of x (median() and nanmedian() without a dim): its gradient shared
    evenly by x's elements equal to it, or, a NaN value, by x's NaNs, as PyTorch's."""
    (x, out) = node.saved
    dtype = node.attrs
    mask = ops.add(ops.astype(ops.equal(x, out), dtype),
                   ops.mul(_nan(ops, x, dtype), _nan(ops, out, dtype)))
    shape = tuple(x.shape)
    count = ops.sum(mask, tuple(range(len(shape))), True)
    share = ops.broadcast_to(ops.div(ops.reshape(grad, (1,) * len(shape)), count), shape)
    return (ops.where(ops.greater(mask, 0.5), share, 0.0),)


def _nan(ops, a, dtype):
    """1.0 where ``a`` is NaN (not equal to itself), else 0.0 (or -0.0)."""
    return ops.neg(ops.sub(ops.astype(ops.equal(a, a), dtype), 1.0))


@rule("reshape")
def _reshape(ops, node, grad):
    return (ops.reshape(grad, node.attrs),)


@rule("transpose")
def _transpose(ops, node, grad):
    axes = node.attrs
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    return (ops.transpose(grad, inverse),)


@rule("broadcast_to")
def _broadcast_to(ops, node, grad):
    return (grad,)


@rule("contiguous")
@rule("clone")
def _contiguous(ops, node, grad):
    return (grad,)


@rule("call_hook")
def _call_hook(ops, node, grad):
    """The identity whose backward hands the raw gradient to ``node.attrs`` (a function that
    returns a replacement gradient or None): what a module's full backward hooks ride on."""
    replaced = node.attrs(grad)
    return (grad if replaced is None else replaced,)


# ---------------------------------------------------------------- matmul


def _swap_last(ops, x):
    axes = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return ops.transpose(x, axes)


@rule("matmul")
def _matmul(ops, node, grad):
    a, b = node.saved
    return (ops.matmul(grad, _swap_last(ops, b)) if node.needs[0] else None,
            ops.matmul(_swap_last(ops, a), grad) if node.needs[1] else None)


@rule("linear")
def _linear(ops, node, grad):
    x, weight = node.saved
    grad_x = ops.matmul(grad, weight) if node.needs[0] else None
    return grad_x, ops.linear_grad_weight(x, grad) if node.needs[1] else None


# ---------------------------------------------------------------- fused ops


@rule("softmax")
def _softmax(ops, node, grad):
    (out,) = node.saved
    axis = node.attrs
    dot = ops.sum(ops.mul(grad, out), (axis,), True)
    return (ops.mul(out, ops.sub(grad, dot)),)


@rule("log_softmax")
def _log_softmax(ops, node, grad):
    (out,) = node.saved
    axis = node.attrs
    return (ops.sub(grad, ops.mul(ops.exp(out), ops.sum(grad, (axis,), True))),)


@rule("softmax_cross_entropy")
def _softmax_cross_entropy(ops, node, grad):
    probs, targets = node.saved
    return ops.softmax_cross_entropy_backward(probs, targets, grad), None


@rule("cross_entropy_loss")
def _cross_entropy_loss(ops, node, grad):
    probs, targets, total = node.saved
    return ops.cross_entropy_loss_backward(probs, targets, grad, *node.attrs, total), None


@rule("rms_div")
def _rms_div(ops, node, grad):
    out, r = node.saved
    last = len(out.shape) - 1
    dot = ops.mean(ops.mul(grad, out), (last,), True)
    return (ops.mul(r, ops.sub(grad, ops.mul(out, dot))),)

RULES.update(INDEXING_RULES)
RULES.update(MATH_RULES)
RULES.update(RECURRENT_RULES)
RULES.update(POOL_RULES)
RULES.update(CONV_RULES)
RULES.update(ATTENTION_RULES)
RULES.update(CUSTOM_RULES)
