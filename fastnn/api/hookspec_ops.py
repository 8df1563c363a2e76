"""The optional hooks (``@op``) of the hook specification: activations, fused kernels,
optimizer steps, collectives, joining.

Each has a composite of the same name in :mod:`fastnn.api.composite` that the registry
binds for a backend without it. :mod:`fastnn.api.hookspec` (the primitives) takes these
into its namespace, so the spec is still one module to pluggy and to backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastnn.api.spec_marks import Array, Shape, op

# ---------------------------------------------------------------- ops (optional: composed)
# Activations: a backend that implements none of them still runs every model.


@op
def relu(x: Array) -> Array:
    """max(x, 0); nan stays nan."""


@op
def leaky_relu(x: Array, slope: float) -> Array:
    """x where x > 0, else slope * x."""


@op
def gelu(x: Array) -> Array:
    """Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))."""


@op
def silu(x: Array) -> Array:
    """x * sigmoid(x)."""


@op
def softplus(x: Array) -> Array:
    """log(1 + e**x), stable: max(x, 0) + log1p(e**-|x|)."""


@op
def sigmoid(x: Array) -> Array:
    """1 / (1 + e**-x), computed without overflow for large |x|."""


# Fused kernels: one launch for what the composite does in several.


@op
def gelu_backward(x: Array, out: Array, grad: Array) -> Array:
    """dL/dx of ``out = gelu(x)`` (as the ``gelu`` hook returned it), given grad = dL/dout:
    grad * (cdf(x) + x * pdf(x)) with the standard normal's cdf and pdf. A NaN or infinite x
    gives NaN, as that formula does."""


@op
def softmax(x: Array, axis: int) -> Array:
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""


@op
def log_softmax(x: Array, axis: int) -> Array:
    """x - max - log(sum(exp(x - max))) along ``axis``."""


@op
def softmax_cross_entropy(logits: Array, targets: Array) -> tuple[Array, Array]:
    """logits (N, C), int targets (N,).

    Returns (loss per row (N,), softmax probabilities (N, C)); the core
    uses the probabilities for the backward pass: (probs - one_hot) * grad.
    A target outside [0, C) (the core checks them only on host-memory
    backends) gives that row a NaN loss and must not be read as an index.
    """


@op
def rms_div(x: Array, eps: float) -> tuple[Array, Array]:
    """r = 1 / sqrt(mean(x**2, last axis, keepdims) + eps).

    Returns (x * r, r); r has shape (..., 1).
    """


@op
def bias_act(x: Array, bias: Array, kind: str, slope: float) -> Array:
    """activation(x + bias); bias broadcasts along the last axis.

    ``kind`` is one of relu, leaky_relu (uses ``slope``), sigmoid, tanh,
    silu, gelu, softplus, identity.
    """


@op
def bias_act_backward(
    x: Array, bias: Array, out: Array, grad: Array, kind: str, slope: float
) -> tuple[Array, Array]:
    """The backward pass of ``out = bias_act(x, bias, kind, slope)``.

    ``grad`` is dL/dout (the shape of x). Returns (dz, dbias): dz = grad *
    activation'(x + bias), which is also dL/dx, and dbias = dz summed over
    every axis but the last (bias's shape). relu's derivative is taken as
    ``out > 0``, so that NaN inputs pass no gradient, as the composite does.
    """


@op
def softmax_cross_entropy_backward(probs: Array, targets: Array, grad: Array) -> Array:
    """dL/dlogits of ``softmax_cross_entropy``: (probs - one_hot) * grad.

    probs (N, C) as that hook returned them, int targets (N,), grad (N,)
    (dL/dloss per row; may be a broadcast view with stride 0). A target
    outside [0, C) makes its whole row NaN, as its loss is, so that an
    optimizer step cannot go ahead on finite, plausible gradients.
    """


@op
def attention(q: Array, k: Array, v: Array, mask: Any, scale: float) -> tuple[Array, Array]:
    """Scaled dot-product attention over the last two axes: weights = softmax(q k^T * scale)
    along S, with the scores where ``mask`` is False taken as -inf; out = weights v.

    q (..., L, E), k (..., S, E), v (..., S, Ev) with one leading shape, L and S at least 1,
    any strides. ``mask`` is None or a bool array broadcastable to (..., L, S), True where
    the query may attend, with at least one True in every row (the core passes the causal
    mask). Returns (out (..., L, Ev), weights (..., L, S)); the core saves the weights for
    ``attention_backward`` and never writes to either."""


@op
def attention_backward(q: Array, k: Array, v: Array, weights: Array, grad: Array,
                       scale: float) -> tuple[Array, Array, Array]:
    """The backward pass of ``attention`` from the weights it returned, given grad =
    dL/dout (..., L, Ev) (possibly a broadcast view). With dw = grad v^T and ds = weights *
    (dw - rowsum(dw * weights)) * scale: (dq, dk, dv) = (ds k, ds^T q, weights^T grad).
    A masked score needs no argument: its weight, so its ds, is 0."""


@op
def sgd_step(
    params: list,
    grads: list,
    bufs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    momentum: float,
    dampening: float,
    nesterov: bool,
    first_step: bool,
) -> tuple[list, list]:
    """One SGD step for many parameters (PyTorch's rule).

    g = grad + wd * p; with momentum: buf = g on the first step, else
    momentum * buf + (1 - dampening) * g; g = g + momentum * buf if nesterov
    else buf. p = p - lr * g. ``bufs`` holds None when momentum == 0.
    Returns the new (params, bufs); may update the arrays in place.
    """


@op
def adam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One Adam (``decoupled=False``) or AdamW step, PyTorch's rule.

    Adam adds wd * p to the gradient; AdamW multiplies p by (1 - lr * wd).
    m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
    p = p - lr * (m / (1 - b1**step)) / (sqrt(v / (1 - b2**step)) + eps).
    Returns the new (params, exp_avgs, exp_avg_sqs); may update in place.
    """


@op
def rmsprop_step(
    params: list,
    grads: list,
    square_avgs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    alpha: float,
    eps: float,
) -> tuple[list, list]:
    """v = alpha*v + (1-alpha)*g*g; p = p - lr * g / (sqrt(v) + eps).

    g includes wd * p. Returns the new (params, square_avgs); may update in place.
    """


@op
def amsgrad_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    max_exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list, list]:
    """One Adam or AdamW step with ``amsgrad=True``, PyTorch's rule.

    As ``adam_step`` (weight decay, m, v), then vmax = max(vmax, v) and
    p = p - lr * (m / (1 - b1**step)) / (sqrt(vmax / (1 - b2**step)) + eps).
    Returns the new (params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs); may update in place.
    """


@op
def rmsprop_momentum_step(
    params: list,
    grads: list,
    square_avgs: list,
    grad_avgs: list,
    bufs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    alpha: float,
    eps: float,
    momentum: float,
    centered: bool,
) -> tuple[list, list, list, list]:
    """RMSprop with momentum and/or ``centered``, PyTorch's rule (g includes wd * p).

    v = alpha*v + (1-alpha)*g*g; centered: a = alpha*a + (1-alpha)*g and
    d = sqrt(v - a*a) + eps, else d = sqrt(v) + eps. momentum > 0:
    buf = momentum*buf + g/d, p = p - lr*buf; else p = p - lr*g/d. ``grad_avgs``
    holds None unless centered, ``bufs`` None when momentum == 0 (and their
    results are then None too). Returns the new (params, square_avgs, grad_avgs, bufs).
    """


@op
def adagrad_step(
    params: list,
    grads: list,
    state_sums: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    eps: float,
) -> tuple[list, list]:
    """g = grad + wd * p; s = s + g*g; p = p - lr * g / (sqrt(s) + eps).

    ``lrs`` already hold PyTorch's decayed rate lr / (1 + (step - 1) * lr_decay).
    Returns the new (params, state_sums); may update in place.
    """


@op
def radam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One RAdam step, PyTorch's rule (weight decay as ``adam_step``).

    m and v as Adam; rho_inf = 2/(1-b2) - 1, rho = rho_inf - 2 step b2**step / (1 - b2**step).
    rho > 5: r = sqrt((rho-4)(rho-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho)) and
    p = p - lr * r * (m / (1 - b1**step)) * sqrt(1 - b2**step) / (sqrt(v) + eps);
    else p = p - lr * m / (1 - b1**step). Returns the new (params, exp_avgs, exp_avg_sqs).
    """


@op
def nadam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    mu: float,
    mu_next: float,
    mu_product: float,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One NAdam step, PyTorch's rule (weight decay as ``adam_step``).

    m and v as Adam; d = sqrt(v / (1 - b2**step)) + eps;
    p = p - lr (1 - mu) / (1 - mu_product) * g / d - lr mu_next / (1 - mu_product mu_next) * m / d,
    where ``mu_product`` is the product of mu over every step so far, this one's included.
    Returns the new (params, exp_avgs, exp_avg_sqs).
    """



# ---------------------------------------------------------------- collectives (ops)
# Called by :mod:`fastnn.distributed` on every rank at once, in the same order, with the
# same number of arrays of the same shapes. ``comm`` is the core's communicator handle:
# ``comm.rank``, ``comm.size``, ``comm.local_rank``; ``comm.host_allreduce(array, reduction)``
# and ``comm.host_broadcast(array, root)`` on one C-contiguous host NumPy array (MPI
# underneath; they return the result, which may be ``array`` itself, reduced or filled
# in place: pass a buffer of your own); ``comm.bcast_object(obj, root)`` for a small
# picklable object
# (e.g. a backend's own communicator id); ``comm.cache``, a dict in which a backend keeps
# its own communicator between calls (key it by backend name and device index). The
# composites stage through the host, which every backend gets for free.


@op
def allreduce(arrays: list, reduction: str, comm: Any, device_index: int) -> list:
    """Reduce each array elementwise over all ranks; new arrays, the inputs left as they were.

    ``arrays``: one dtype (float or integer), all on device ``device_index``, any
    shapes (0-d and size-0 included). ``reduction``: "sum", "max" or "min" (the core
    divides for a mean). Returns one array per input, same shape and dtype, equal on
    every rank. One collective for the whole list (pack, reduce, unpack), not one per
    array: this is how a step's gradients travel.
    """


@op
def broadcast(arrays: list, root: int, comm: Any, device_index: int) -> list:
    """Rank ``root``'s arrays on every rank; new arrays, the inputs left as they were.

    As :func:`allreduce`: one dtype, one device, one collective for the whole list.
    Every rank passes arrays of the shapes root passes (the core checks this first).
    """


@op
def cat(arrays: list, axis: int) -> Array:
    """Join arrays (one dtype, equal shapes but on ``axis``) along ``axis`` (a new array)."""


@op
def index_select(x: Array, axis: int, index: Array) -> Array:
    """``x`` at the positions ``index`` (1-d int64) along ``axis``: the shape of ``x`` with
    ``axis`` of length ``len(index)`` (NumPy's take). Indices are checked as gather's
    are; a device backend must not read out of bounds (an out-of-range index gives 0)."""


# ---------------------------------------------------------------- writes through views


@op
def assign(dst: Array, src: Array) -> None:
    """Write ``src`` into ``dst``'s memory, in place; returns nothing.

    ``dst`` is an array this backend made, possibly a view returned by its ``slice``,
    ``transpose``, ``broadcast_to`` (never written: the core refuses writes into expanded
    views) or ``reshape``; ``src`` has ``dst``'s shape and dtype. The values must then be
    seen through every array that shares ``dst``'s memory: implementing this hook is the
    promise that those four hooks return aliasing views, so the core writes through them.

    A backend without it (one that knows only contiguous arrays) is still correct: its
    composite raises, and the core never calls it there but scatters the write into the
    base tensor's array and re-reads that base's live views (fastnn.ops.storage).
    """


# ---------------------------------------------------------------- step capture


@op
def compile_program(program: Any) -> Any:
    """A recorded step (``fnn.compile``) made runnable by this backend: return a function
    ``run(inputs) -> outputs``.

    ``program`` (:class:`fastnn.api.program.Program`) holds ``calls`` (each with ``name``,
    the hook; ``args`` and ``kwargs``, in which :class:`fastnn.api.program.Slot` ``i``
    stands for value ``i``; ``out``, the result's slots), ``inputs`` (the slot numbers
    ``run`` receives values for, in that order: arrays, and numbers such as a learning
    rate or a seed) and ``outputs`` (the slots ``run`` returns, in that order); also
    ``describe`` (slot -> "float32[64, 10]"), ``layouts`` (slot -> the recorded array's
    strides) and ``aliases`` (slot -> the argument slots its recorded array shared memory
    with: a view), for a backend that plans buffers. Running
    the calls in order with this backend's hooks is the contract: a backend may fuse,
    plan buffers, or build one launch list, as long as the outputs equal what the calls
    give (bit for bit unless it fuses). The composite is the core's interpreter (the
    calls as straight-line Python, each value dropped after its last use).
    """


# ---------------------------------------------------------------- pooling


@op
def max_pool2d(x: Array, kernel: Shape, stride: Shape, padding: Shape, dilation: Shape,
               output_size: Shape) -> Array:
    """Max over windows of x (N, C, H, W): (N, C, OH, OW) = ``output_size``, where
    out[n, c, i, j] is the max of x[n, c, i*sh - ph + a*dh, j*sw - pw + b*dw] over the
    (a, b) < ``kernel`` whose position lies inside the input (the padding, and the part of
    a ``ceil_mode`` window past the end, take no part). Every window holds at least one
    input position (the core checks). A NaN in a window makes its output NaN."""


@op
def max_pool2d_backward(x: Array, out: Array, grad: Array, kernel: Shape, stride: Shape,
                        padding: Shape, dilation: Shape) -> Array:
    """dL/dx (x's shape) of ``out = max_pool2d(x, ...)`` given grad = dL/dout: each window's
    gradient is shared evenly by its input positions equal to its max (ties share, as the
    core's ``max`` does); where windows overlap, the shares add up. A window whose max is
    NaN passes no gradient."""


@op
def fused_elementwise(expr: Any, inputs: list) -> Array:
    """One elementwise expression over arrays of one shape: a chain of elementwise calls
    of a recorded program (``fnn.compile``) fused into one.

    ``expr`` is a tuple tree: ``("in", k)`` is ``inputs[k]``, ``("const", v)`` a Python
    number, ``(op, *operands)`` the hook ``op`` (neg, exp, log, sqrt, abs, tanh, sigmoid,
    relu, add, sub, mul, div, maximum, minimum, greater, less, equal, where) on its
    operands in the hook's own order. Every input has the result's shape and floating
    dtype, but a ``where`` condition, which may be a bool input. Returns a new array; it
    must equal what the hooks give node by node within the conformance suite's elementwise
    tolerance (bit for bit where the backend evaluates each node as its own hook does).
    The core fuses only for a backend that implements this hook.
    """


# ---------------------------------------------------------------- batch normalisation


@op
def batch_norm_train(x: Array, weight: Array, bias: Array,
                     eps: float) -> tuple[Array, Array, Array]:
    """Training-mode batch normalisation of x (N, C, ...) over every axis but 1, with the
    batch's statistics: returns (out, mean, var), out = (x - mean) / sqrt(var + eps) *
    weight + bias (weight, bias (C,) broadcast along axis 1), mean and var (C,) the
    per-channel mean and biased variance. x may be any strided view; N * (spatial size)
    is at least 2 (the core checks)."""


@op
def batch_norm_backward(x: Array, weight: Array, mean: Array, var: Array, grad: Array,
                        eps: float) -> tuple[Array, Array, Array]:
    """The backward pass of ``batch_norm_train``: (dx, dweight, dbias) given grad = dL/dout
    (x's shape, possibly a broadcast view) and the mean and var that call returned.
    With xhat = (x - mean) / sqrt(var + eps) and m = N * (spatial size): dbias = sum(grad),
    dweight = sum(grad * xhat) (sums over every axis but 1), dx = weight / sqrt(var + eps)
    / m * (m * grad - dbias - xhat * dweight)."""


@op
def layer_norm_train(x: Array, weight: Array, bias: Array,
                     eps: float) -> tuple[Array, Array, Array]:
    """Layer normalisation of x (..., D) over its last axis: returns (out, mean, rstd), out =
    (x - mean) * rstd * weight + bias with rstd = 1 / sqrt(var + eps) (the biased variance),
    weight and bias (D,), mean and rstd (..., 1). x may be any strided view."""


@op
def layer_norm_backward(x: Array, weight: Array, mean: Array, rstd: Array,
                        grad: Array) -> tuple[Array, Array, Array]:
    """The backward pass of ``layer_norm_train``: (dx, dweight, dbias) given grad = dL/dout
    (x's shape, possibly a broadcast view) and the mean and rstd that call returned. With
    xhat = (x - mean) * rstd and g = grad * weight: dbias = sum(grad), dweight = sum(grad *
    xhat) (sums over every axis but the last), dx = rstd * (g - mean(g) - xhat * mean(g *
    xhat)) (means over the last axis)."""


# ---------------------------------------------------------------- recurrent layers


@op
def lstm_layer(x: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array,
               bias: Array) -> tuple[Array, Array, Array]:
    """One LSTM layer over a whole sequence, as PyTorch's (gates i, f, g, o in that order).

    x (T, N, I) time-major, h0 and c0 (N, H), w_ih (4H, I), w_hh (4H, H), bias (4H,) (the
    sum of PyTorch's b_ih and b_hh; zeros without bias). With a = x_t w_ih^T + h w_hh^T +
    bias: i, f, o = sigmoid, g = tanh of their quarters, c' = f c + i g, h' = o tanh(c').
    Returns (out, gates, cells): out (T, N, H) every step's h, gates (T, N, 4H) the
    activated i, f, g, o, cells (T, N, H) every step's c; h_T is out[-1], c_T cells[-1].
    The input projection of all steps may be one GEMM."""


@op
def lstm_layer_backward(x: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array,
                        out: Array, gates: Array, cells: Array, grad_out: Array,
                        grad_c: Array) -> tuple[Array, Array, Array, Array, Array, Array]:
    """The backward pass of ``lstm_layer`` from its outputs: grad_out (T, N, H) = dL/dout
    (the gradient of h_T included in its last step), grad_c (N, H) = dL/dc_T. Returns
    (dx, dh0, dc0, dw_ih, dw_hh, dbias), dbias (4H,) the gradient of each of PyTorch's
    two biases."""


@op
def gru_layer(x: Array, h0: Array, w_ih: Array, w_hh: Array, b_ih: Array,
              b_hh: Array) -> tuple[Array, Array]:
    """One GRU layer over a whole sequence, as PyTorch's (gates r, z, n in that order).

    x (T, N, I), h0 (N, H), w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H,) (zeros without
    bias). With p = x_t w_ih^T + b_ih and q = h w_hh^T + b_hh: r, z = sigmoid(p + q) of
    their thirds, n = tanh(p_n + r q_n), h' = (1 - z) n + z h. Returns (out, saved):
    out (T, N, H) every step's h, saved (T, N, 4H) the r, z, n and q_n of every step."""


@op
def gru_layer_backward(x: Array, h0: Array, w_ih: Array, w_hh: Array, out: Array,
                       saved: Array, grad_out: Array) -> tuple[Array, Array, Array, Array,
                                                              Array, Array]:
    """The backward pass of ``gru_layer``: grad_out (T, N, H) = dL/dout (h_T's gradient
    included in its last step). Returns (dx, dh0, dw_ih, dw_hh, db_ih, db_hh)."""


# ---------------------------------------------------------------- transfer of many arrays


@op
def to_numpy_many(arrays: list) -> list:
    """Host NumPy arrays of ``arrays`` (backend arrays, on any of the backend's devices),
    in order: the same as ``[to_numpy(a) for a in arrays]``, but a device backend may
    start every copy before it waits once (one queue wait instead of one per array).
    Results may share memory (arrays that view one buffer may be read once and viewed
    on the host); a result that shares memory with another result is read-only. Shadow
    mode reads a call's inputs and outputs with it."""
