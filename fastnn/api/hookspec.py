"""The hook specification: the whole contract between fastnn's core and a backend.

A backend is a module (or object) registered under the entry-point group
``fastnn.backends``. It implements the hooks below with ``@hookimpl`` and the
*same parameter names in the same order* as the spec (the registry checks
this, so the core can call implementations positionally on the hot path).

Arrays. A backend chooses its own array type ("backend array"). The core
only requires that it exposes ``.shape`` (a tuple of ints); everything else
goes through hooks. Dtypes are passed as names: ``"float32"``, ``"float64"``,
``"float16"``, ``"bfloat16"``, ``"int32"``, ``"int64"``, ``"bool"``.

What the core guarantees before calling a hook (so backends need not check):
operands live on this backend, binary operands have the same dtype (the core
promotes first) and broadcastable shapes, ``axis`` arguments are tuples of
non-negative ints (``None`` means all axes), conv1d shapes are valid.

Required hooks are the *primitives*. Hooks marked "optional (fused)" have a
composite default in :mod:`fastnn.api.composite` written with primitives, so
a minimal backend needs only the primitives. Outputs must be new arrays (or
views) and must never alias an input that a later in-place update could
change, except where a hook says it updates in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pluggy

PROJECT = "fastnn"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

Array = Any
Shape = tuple[int, ...]
Axes = tuple[int, ...] | None

# ---------------------------------------------------------------- backend


@hookspec(firstresult=True)
def backend_probe() -> dict:
    """Say whether this backend can run here. Called once, when it is loaded.

    Returns a dict: ``available`` (bool), ``reason`` (why not, with an install
    hint; "" when available), ``devices`` (list of human-readable device
    descriptions, index = device index), ``dtypes`` (dtype names supported),
    ``version`` (of the underlying library), and optionally ``host_memory``
    (True when arrays live in host RAM, so the core may validate values such
    as class targets on the host for free). Must not raise.
    """


# ---------------------------------------------------------------- creation and transfer


@hookspec(firstresult=True)
def from_numpy(array: Any, device_index: int) -> Array:
    """Copy a host NumPy array (any layout) onto device ``device_index``; keep its dtype."""


@hookspec(firstresult=True)
def to_numpy(x: Array) -> Any:
    """Return ``x`` as a host NumPy array (a copy unless the array already lives on the host)."""


@hookspec(firstresult=True)
def full(shape: Shape, value: float, dtype: str, device_index: int) -> Array:
    """A new array of ``shape`` filled with ``value``."""


@hookspec(firstresult=True)
def uniform(shape: Shape, dtype: str, device_index: int, seed: int) -> Array:
    """Uniform samples in [0, 1). The same ``seed`` gives the same array on one backend."""


@hookspec(firstresult=True)
def astype(x: Array, dtype: str) -> Array:
    """Convert to ``dtype`` (a copy). Float to int truncates toward zero."""


# ---------------------------------------------------------------- elementwise unary
# Each takes and returns one array of the same shape and dtype.


@hookspec(firstresult=True)
def neg(x: Array) -> Array:
    """-x."""


@hookspec(firstresult=True)
def exp(x: Array) -> Array:
    """e**x."""


@hookspec(firstresult=True)
def log(x: Array) -> Array:
    """Natural log; log(0) = -inf, log(<0) = nan."""


@hookspec(firstresult=True)
def sqrt(x: Array) -> Array:
    """Square root; nan for x < 0."""


@hookspec(firstresult=True)
def abs(x: Array) -> Array:
    """|x|."""


@hookspec(firstresult=True)
def sign(x: Array) -> Array:
    """-1, 0 or 1 (nan stays nan)."""


@hookspec(firstresult=True)
def erf(x: Array) -> Array:
    """The error function."""


@hookspec(firstresult=True)
def tanh(x: Array) -> Array:
    """Hyperbolic tangent."""


@hookspec(firstresult=True)
def sigmoid(x: Array) -> Array:
    """1 / (1 + e**-x), computed without overflow for large |x|."""


@hookspec(firstresult=True)
def relu(x: Array) -> Array:
    """max(x, 0); nan stays nan."""


@hookspec(firstresult=True)
def leaky_relu(x: Array, slope: float) -> Array:
    """x where x > 0, else slope * x."""


@hookspec(firstresult=True)
def gelu(x: Array) -> Array:
    """Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))."""


@hookspec(firstresult=True)
def silu(x: Array) -> Array:
    """x * sigmoid(x)."""


@hookspec(firstresult=True)
def softplus(x: Array) -> Array:
    """log(1 + e**x), stable: max(x, 0) + log1p(e**-|x|)."""


# ---------------------------------------------------------------- elementwise binary
# NumPy broadcasting; both operands have the same dtype; the result has it too.
# ``b`` may also be a Python float or int: then it is a scalar of ``a``'s dtype
# (the core never passes a float scalar with an integer ``a``).


@hookspec(firstresult=True)
def add(a: Array, b: Array) -> Array:
    """a + b."""


@hookspec(firstresult=True)
def sub(a: Array, b: Array) -> Array:
    """a - b."""


@hookspec(firstresult=True)
def mul(a: Array, b: Array) -> Array:
    """a * b."""


@hookspec(firstresult=True)
def div(a: Array, b: Array) -> Array:
    """a / b (IEEE: x/0 = +-inf, 0/0 = nan)."""


@hookspec(firstresult=True)
def pow(a: Array, b: Array) -> Array:
    """a ** b. Integers stay integers and wrap on overflow (as NumPy's); for b < 0 the
    result is PyTorch's truncated 1 / a**|b|: 1 for a == 1, +-1 for a == -1, else 0."""


@hookspec(firstresult=True)
def maximum(a: Array, b: Array) -> Array:
    """Elementwise max; nan if either is nan."""


@hookspec(firstresult=True)
def minimum(a: Array, b: Array) -> Array:
    """Elementwise min; nan if either is nan."""


@hookspec(firstresult=True)
def greater(a: Array, b: Array) -> Array:
    """a > b as a bool array."""


@hookspec(firstresult=True)
def less(a: Array, b: Array) -> Array:
    """a < b as a bool array."""


@hookspec(firstresult=True)
def equal(a: Array, b: Array) -> Array:
    """a == b as a bool array."""


@hookspec(firstresult=True)
def where(cond: Array, a: Array, b: Array) -> Array:
    """a where cond (bool) else b; the three broadcast together; a and b share a dtype.

    ``b`` may be a Python scalar, as for the binary ops.
    """


# ---------------------------------------------------------------- reductions


@hookspec(firstresult=True)
def sum(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Sum over ``axis`` (tuple, possibly empty; None = all). Size-0 axes sum to 0."""


@hookspec(firstresult=True)
def mean(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Mean over ``axis``. Size-0 axes give nan; inf where the sum in x's dtype
    overflows (as NumPy and PyTorch give), however the backend accumulates."""


@hookspec(firstresult=True)
def max(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Max over ``axis``; nan propagates. The core never asks for a size-0 axis."""


@hookspec(firstresult=True)
def argmax(x: Array, axis: int) -> Array:
    """Index of the first maximum along one axis, as int64; the axis is removed."""


# ---------------------------------------------------------------- data movement


@hookspec(firstresult=True)
def reshape(x: Array, shape: Shape) -> Array:
    """Same elements in C order with a new shape (same size). May return a view."""


@hookspec(firstresult=True)
def transpose(x: Array, axes: Shape) -> Array:
    """Permute axes (a full permutation). May return a view."""


@hookspec(firstresult=True)
def broadcast_to(x: Array, shape: Shape) -> Array:
    """Broadcast ``x`` to ``shape`` (NumPy rules). May return a read-only view."""


@hookspec(firstresult=True)
def contiguous(x: Array) -> Array:
    """A C-contiguous array with the same values (a copy if ``x`` is not one)."""


@hookspec(firstresult=True)
def one_hot(indices: Array, num_classes: int, dtype: str) -> Array:
    """(..., num_classes) array with 1 at each integer index and 0 elsewhere.

    The core checks that every index is in [0, num_classes).
    """


# ---------------------------------------------------------------- linear algebra and convolution


@hookspec(firstresult=True)
def matmul(a: Array, b: Array) -> Array:
    """Matrix product with NumPy ``matmul`` semantics (batched, broadcasting, 1-D promotion).

    Every dtype: int32/int64 products wrap as NumPy's do; bool @ bool is an OR of ANDs.
    """


@hookspec(firstresult=True)
def conv1d(
    x: Array, weight: Array, stride: int, padding: int, dilation: int, groups: int
) -> Array:
    """1-D cross-correlation (PyTorch's conv1d, no bias).

    x: (N, C_in, L); weight: (C_out, C_in // groups, K); zero padding of
    ``padding`` on both ends. Returns (N, C_out, L_out) with
    L_out = (L + 2*padding - dilation*(K-1) - 1) // stride + 1.
    """


@hookspec(firstresult=True)
def conv1d_grad_input(
    grad_out: Array,
    weight: Array,
    input_length: int,
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
) -> Array:
    """Gradient of conv1d with respect to x: (N, C_in, input_length)."""


@hookspec(firstresult=True)
def conv1d_grad_weight(
    x: Array,
    grad_out: Array,
    kernel_size: int,
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
) -> Array:
    """Gradient of conv1d with respect to the weight: (C_out, C_in // groups, K)."""


# ---------------------------------------------------------------- optional fused hooks


@hookspec(firstresult=True)
def softmax(x: Array, axis: int) -> Array:
    """Optional (fused). exp(x - max) / sum(exp(x - max)) along ``axis``."""


@hookspec(firstresult=True)
def log_softmax(x: Array, axis: int) -> Array:
    """Optional (fused). x - max - log(sum(exp(x - max))) along ``axis``."""


@hookspec(firstresult=True)
def softmax_cross_entropy(logits: Array, targets: Array) -> tuple[Array, Array]:
    """Optional (fused). logits (N, C), int targets (N,).

    Returns (loss per row (N,), softmax probabilities (N, C)); the core
    uses the probabilities for the backward pass: (probs - one_hot) * grad.
    A target outside [0, C) (the core checks them only on host-memory
    backends) gives that row a NaN loss and must not be read as an index.
    """


@hookspec(firstresult=True)
def rms_div(x: Array, eps: float) -> tuple[Array, Array]:
    """Optional (fused). r = 1 / sqrt(mean(x**2, last axis, keepdims) + eps).

    Returns (x * r, r); r has shape (..., 1).
    """


@hookspec(firstresult=True)
def bias_act(x: Array, bias: Array, kind: str, slope: float) -> Array:
    """Optional (fused). activation(x + bias); bias broadcasts along the last axis.

    ``kind`` is one of relu, leaky_relu (uses ``slope``), sigmoid, tanh,
    silu, gelu, softplus, identity.
    """


@hookspec(firstresult=True)
def bias_act_backward(
    x: Array, bias: Array, out: Array, grad: Array, kind: str, slope: float
) -> tuple[Array, Array]:
    """Optional (fused). The backward pass of ``out = bias_act(x, bias, kind, slope)``.

    ``grad`` is dL/dout (the shape of x). Returns (dz, dbias): dz = grad *
    activation'(x + bias), which is also dL/dx, and dbias = dz summed over
    every axis but the last (bias's shape). relu's derivative is taken as
    ``out > 0``, so that NaN inputs pass no gradient, as the composite does.
    """


@hookspec(firstresult=True)
def softmax_cross_entropy_backward(probs: Array, targets: Array, grad: Array) -> Array:
    """Optional (fused). dL/dlogits of ``softmax_cross_entropy``: (probs - one_hot) * grad.

    probs (N, C) as that hook returned them, int targets (N,), grad (N,)
    (dL/dloss per row; may be a broadcast view with stride 0). A target
    outside [0, C) makes its whole row NaN, as its loss is, so that an
    optimizer step cannot go ahead on finite, plausible gradients.
    """


@hookspec(firstresult=True)
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
    """Optional (fused). One SGD step for many parameters (PyTorch's rule).

    g = grad + wd * p; with momentum: buf = g on the first step, else
    momentum * buf + (1 - dampening) * g; g = g + momentum * buf if nesterov
    else buf. p = p - lr * g. ``bufs`` holds None when momentum == 0.
    Returns the new (params, bufs); may update the arrays in place.
    """


@hookspec(firstresult=True)
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
    """Optional (fused). One Adam (``decoupled=False``) or AdamW step, PyTorch's rule.

    Adam adds wd * p to the gradient; AdamW multiplies p by (1 - lr * wd).
    m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
    p = p - lr * (m / (1 - b1**step)) / (sqrt(v / (1 - b2**step)) + eps).
    Returns the new (params, exp_avgs, exp_avg_sqs); may update in place.
    """


@hookspec(firstresult=True)
def rmsprop_step(
    params: list,
    grads: list,
    square_avgs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    alpha: float,
    eps: float,
) -> tuple[list, list]:
    """Optional (fused). v = alpha*v + (1-alpha)*g*g; p = p - lr * g / (sqrt(v) + eps).

    g includes wd * p. Returns the new (params, square_avgs); may update in place.
    """


PRIMITIVES = (
    "from_numpy to_numpy full uniform astype "
    "neg exp log sqrt abs sign erf tanh sigmoid relu leaky_relu gelu silu softplus "
    "add sub mul div pow maximum minimum greater less equal where "
    "sum mean max argmax reshape transpose broadcast_to contiguous one_hot "
    "matmul conv1d conv1d_grad_input conv1d_grad_weight"
).split()
FUSED = (
    "softmax log_softmax softmax_cross_entropy softmax_cross_entropy_backward rms_div "
    "bias_act bias_act_backward sgd_step adam_step rmsprop_step"
).split()
