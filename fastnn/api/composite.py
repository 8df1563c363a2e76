"""The composites of the ops (the optional hooks), written with primitives and other ops.

Each function takes the backend's :class:`~fastnn.api.registry.Ops` first and
then the hook's own parameters; the registry binds ``ops`` for a backend that
does not provide the fused hook itself. Python scalars are passed as the
second operand of binary primitives, as the hook specification allows.
"""

from __future__ import annotations

import math

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _one_minus(ops, x):
    return ops.add(ops.neg(x), 1.0)


def _relu_grad(ops, out, grad):
    """grad, except 0 where out = relu(z) is 0 (z <= 0): a NaN z passes grad, as PyTorch's
    threshold_backward (out <= 0 gives 0); out > 0 would stop it."""
    return ops.where(ops.equal(ops.equal(out, 0.0), 0), grad, 0.0)


def activation_grad(ops, kind, z, out, grad, slope=0.0):
    """dL/dz for out = kind(z), given dL/dout."""
    if kind == "identity":
        return grad
    if kind == "relu":
        return ops.relu_backward(out, grad)
    if kind == "leaky_relu":
        return ops.where(ops.greater(z, 0.0), grad, ops.mul(grad, slope))
    if kind == "sigmoid":
        return ops.mul(grad, ops.mul(out, _one_minus(ops, out)))
    if kind == "tanh":
        return ops.mul(grad, _one_minus(ops, ops.mul(out, out)))
    if kind == "silu":
        s = ops.sigmoid(z)
        return ops.mul(grad, ops.mul(s, ops.add(ops.mul(z, _one_minus(ops, s)), 1.0)))
    if kind == "gelu":
        cdf = ops.mul(ops.add(ops.erf(ops.mul(z, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
        pdf = ops.mul(ops.exp(ops.mul(ops.mul(z, z), -0.5)), _INV_SQRT_2PI)
        return ops.mul(grad, ops.add(cdf, ops.mul(z, pdf)))
    if kind == "softplus":
        return ops.mul(grad, ops.sigmoid(z))
    raise ValueError(f"unknown activation kind {kind!r}")



# ---------------------------------------------------------------- activations


def relu(ops, x):
    return ops.maximum(x, 0.0)  # maximum keeps NaN, as the spec of relu asks


def leaky_relu(ops, x, slope):
    return ops.where(ops.greater(x, 0.0), x, ops.mul(x, slope))


def sigmoid(ops, x):
    # NOTE: 1 / (1 + e**-x) is right to rounding everywhere: for x << 0, e**-x is inf and
    # the result 0 (the true value underflows); pow(., -1) since a scalar is never operand a
    return ops.pow(ops.add(ops.exp(ops.neg(x)), 1.0), -1.0)


def gelu(ops, x):
    cdf = ops.mul(ops.add(ops.erf(ops.mul(x, 1.0 / math.sqrt(2.0))), 1.0), 0.5)
    return ops.mul(x, cdf)


def gelu_backward(ops, x, out, grad):
    return activation_grad(ops, "gelu", x, out, grad)


def relu_backward(ops, out, grad):
    return _relu_grad(ops, out, grad)


def silu(ops, x):
    return ops.mul(x, ops.sigmoid(x))


def softplus(ops, x):
    """max(x, 0) + log1p(e**-|x|), with log1p from log by Kahan's correction (accurate where
    e**-|x| is below the rounding unit of 1, unlike log(1 + u))."""
    u = ops.exp(ops.neg(ops.abs(x)))
    return ops.add(ops.maximum(x, 0.0), log1p(ops, u))


def log1p(ops, u):
    """log(1 + u) to full precision: log(w) * u / (w - 1) with w = 1 + u, and u where w == 1."""
    w = ops.add(u, 1.0)
    d = ops.sub(w, 1.0)
    exact = ops.equal(d, 0.0)
    safe = ops.where(exact, ops.add(d, 1.0), d)  # 1 where d is 0 (a scalar goes second)
    return ops.where(exact, u, ops.div(ops.mul(ops.log(w), u), safe))


# ---------------------------------------------------------------- fused kernels


def rms_div(ops, x, eps):
    ms = ops.mean(ops.mul(x, x), (len(x.shape) - 1,), True)
    r = ops.pow(ops.add(ms, eps), -0.5)
    return ops.mul(x, r), r


def bias_act(ops, x, bias, kind, slope):
    z = ops.add(x, bias)
    if kind == "identity":
        return z
    if kind == "leaky_relu":
        return ops.leaky_relu(z, slope)
    return getattr(ops, kind)(z)


def bias_act_backward(ops, x, bias, out, grad, kind, slope):
    if kind == "relu":  # (from out alone: z is not needed)
        dz = ops.relu_backward(out, grad)
    else:
        z = out if kind in ("sigmoid", "tanh", "identity") else ops.add(x, bias)
        dz = activation_grad(ops, kind, z, out, grad, slope)
    lead = tuple(range(len(dz.shape) - 1))
    return dz, ops.sum(dz, lead, False) if lead else dz


def linear(ops, x, weight):
    shape = x.shape
    weight_t = ops.transpose(weight, (1, 0))
    if len(shape) <= 2:
        return ops.matmul(x, weight_t)
    # the leading axes folded into one: NumPy's batched matmul with a transposed right
    # operand ran 1.5-2x slower than the one 2-d GEMM
    rows = ops.reshape(x, (math.prod(shape[:-1]), shape[-1]))
    return ops.reshape(ops.matmul(rows, weight_t), shape[:-1] + (weight.shape[0],))


def linear_grad_weight(ops, x, grad):
    count = math.prod(x.shape[:-1])
    rows = grad if len(grad.shape) == 2 else ops.reshape(grad, (count, grad.shape[-1]))
    cols = x if len(x.shape) == 2 else ops.reshape(x, (count, x.shape[-1]))
    return ops.matmul(ops.transpose(rows, (1, 0)), cols)


def sgd_step(ops, params, grads, bufs, lrs, weight_decays, momentum, dampening, nesterov,
             first_step):
    new_params, new_bufs = [], []
    for p, g, buf, lr, wd in zip(params, grads, bufs, lrs, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        if momentum:
            if first_step or buf is None:
                buf = ops.mul(g, 1.0)  # a fresh copy: never alias the gradient
            else:
                buf = ops.add(ops.mul(buf, momentum), ops.mul(g, 1.0 - dampening))
            g = ops.add(g, ops.mul(buf, momentum)) if nesterov else buf
        new_params.append(ops.sub(p, ops.mul(g, lr)))
        new_bufs.append(buf)
    return new_params, new_bufs


def adam_step(ops, params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2,
              eps, step, decoupled):
    out_p, out_m, out_v = [], [], []
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        if wd and decoupled:
            p = ops.mul(p, 1.0 - lr * wd)
        elif wd:
            g = ops.add(g, ops.mul(p, wd))
        m = ops.add(ops.mul(m, beta1), ops.mul(g, 1.0 - beta1))
        v = ops.add(ops.mul(v, beta2), ops.mul(ops.mul(g, g), 1.0 - beta2))
        m_hat = ops.div(m, 1.0 - beta1**step)
        denom = ops.add(ops.sqrt(ops.div(v, 1.0 - beta2**step)), eps)
        out_p.append(ops.sub(p, ops.mul(ops.div(m_hat, denom), lr)))
        out_m.append(m)
        out_v.append(v)
    return out_p, out_m, out_v


def rmsprop_step(ops, params, grads, square_avgs, lrs, weight_decays, alpha, eps):
    out_p, out_v = [], []
    for p, g, v, lr, wd in zip(params, grads, square_avgs, lrs, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        v = ops.add(ops.mul(v, alpha), ops.mul(ops.mul(g, g), 1.0 - alpha))
        out_p.append(ops.sub(p, ops.mul(ops.div(g, ops.add(ops.sqrt(v), eps)), lr)))
        out_v.append(v)
    return out_p, out_v


from fastnn.api.composite_optim import (  # noqa: E402,F401  (the newer optimizer steps)
    adadelta_step,
    adagrad_step,
    adamax_step,
    amsgrad_step,
    asgd_step,
    clip_grads_with_norm,
    nadam_step,
    radam_step,
    rmsprop_momentum_step,
    rprop_step,
    total_norm,
)

# ---------------------------------------------------------------- joining and selecting


def cat(ops, arrays, axis):
    """slice_scatter of each piece into one array of the joined shape.

    The base's values never show (every position is written), so it is any array of
    that shape: one element of a non-empty piece, broadcast.
    """
    rank = len(arrays[0].shape)
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    shape = tuple(shape)
    first = next((a for a in arrays if math.prod(a.shape)), None)
    if first is None or not math.prod(shape):  # nothing to copy: an empty array of that shape
        empty = ops.slice(arrays[0], (0,) * rank, (0,) * rank, (1,) * rank)
        return ops.contiguous(ops.reshape(empty, shape))
    one = ops.reshape(ops.slice(first, (0,) * rank, (1,) * rank, (1,) * rank), (1,) * rank)
    out = ops.contiguous(ops.broadcast_to(one, shape))
    offset = 0
    for a in arrays:
        n = a.shape[axis]
        if n:
            starts = tuple(offset if d == axis else 0 for d in range(rank))
            stops = tuple(offset + n if d == axis else shape[d] for d in range(rank))
            out = ops.slice_scatter(out, a, starts, stops, (1,) * rank)
        offset += n
    return out


def index_select(ops, x, axis, index):
    """gather with ``index`` broadcast along every other axis."""
    rank = len(x.shape)
    lined = ops.reshape(index, tuple(index.shape[0] if d == axis else 1 for d in range(rank)))
    target = tuple(index.shape[0] if d == axis else n for d, n in enumerate(x.shape))
    return ops.gather(x, axis, ops.broadcast_to(lined, target))



# ---------------------------------------------------------------- writes through views


def assign(ops, dst, src):
    raise NotImplementedError(
        f"assign: {ops!r} writes through views by the core's composite (fastnn.ops.storage "
        "scatters into the base and refreshes its views); the hook itself has no composite")


# ---------------------------------------------------------------- step capture


def compile_program(ops, program):
    """The core's replay interpreter (fastnn.api.program_run.interpreter)."""
    from fastnn.api.program_run import interpreter

    return interpreter(program)


def fused_elementwise(ops, expr, inputs):
    """The expression node by node with the backend's own hooks (fastnn.api.fusion)."""
    from fastnn.api.fusion import evaluate

    return evaluate(ops, expr, inputs)


# ---------------------------------------------------------------- convolution


def conv2d_backward(ops, x, weight, grad_out, stride, padding, dilation, groups):
    """(dx, dweight) of conv2d: its two gradient primitives, one after the other."""
    attrs = (stride, padding, dilation, groups)
    return (ops.conv2d_grad_input(grad_out, weight, tuple(x.shape[2:]), *attrs),
            ops.conv2d_grad_weight(x, grad_out, tuple(weight.shape[2:]), *attrs))


# ---------------------------------------------------------------- transfer of many arrays


def to_numpy_many(ops, arrays):
    """``to_numpy`` of each array, one after another."""
    return [ops.to_numpy(a) for a in arrays]


def to_numpy_views(ops, arrays):
    """None: no views (the caller reads copies with ``to_numpy_many``)."""
    return None


from fastnn.api.composite_attention import (  # noqa: E402,F401  (the attention hooks)
    attention,
    attention_backward,
    attention_packed,
    attention_packed_backward,
)
from fastnn.api.composite_collectives import (  # noqa: E402,F401  (host-staged collectives)
    allreduce,
    broadcast,
    host_allreduce,
    host_broadcast,
    host_pack,
    host_reduce_packed,
    host_views,
)
from fastnn.api.composite_linalg import (  # noqa: E402,F401  (the linear-algebra hooks)
    linalg_slogdet,
    linalg_solve,
)
from fastnn.api.composite_linalg_decomp import (  # noqa: E402,F401  (the decompositions)
    linalg_eigh,
    linalg_qr,
    linalg_svd,
)
from fastnn.api.composite_norm import (  # noqa: E402,F401  (the batch-norm hooks)
    batch_norm_backward,
    batch_norm_train,
    layer_norm_backward,
    layer_norm_train,
)
from fastnn.api.composite_pool import (  # noqa: E402,F401  (the pooling hooks)
    max_pool2d,
    max_pool2d_backward,
)
from fastnn.api.composite_recurrent import (  # noqa: E402,F401  (the recurrent-layer hooks)
    gru_layer,
    gru_layer_backward,
    lstm_layer,
    lstm_layer_backward,
)
from fastnn.api.composite_softmax import (  # noqa: E402,F401  (softmax, cross-entropy)
    cross_entropy_loss,
    cross_entropy_loss_backward,
    cross_entropy_loss_grad,
    kept_targets,
    log_softmax,
    softmax,
    softmax_cross_entropy,
    softmax_cross_entropy_backward,
)
