"""The hook specification: the whole contract between fastnn's core and a backend.

A backend is a module (or object) registered under the entry-point group
``fastnn.backends``. It implements the hooks below with ``@hookimpl`` and the
*same parameter names in the same order* as the spec (the registry checks
this, so the core can call implementations positionally on the hot path).

Arrays. A backend chooses its own array type ("backend array"). The core
only requires that it exposes ``.shape`` (a tuple of ints); everything else
goes through hooks. Dtypes are passed as names: ``"float32"``, ``"float64"``,
``"float16"``, ``"bfloat16"``, ``"uint8"``, ``"int8"``, ``"int16"``, ``"int32"``,
``"int64"``, ``"bool"`` (a backend lists those it holds in its probe; the core refuses
the others before any hook runs). On the host, a bfloat16 array is an ml_dtypes
``bfloat16`` NumPy array (:func:`fastnn.api.dtypes.numpy_bfloat16`): what ``from_numpy``
receives and ``to_numpy`` returns for that dtype.

What the core guarantees before calling a hook (so backends need not check):
operands live on this backend, binary operands have the same dtype (the core
promotes first) and broadcastable shapes, ``axis`` arguments are tuples of
non-negative ints (``None`` means all axes), conv1d and conv2d shapes are valid.

Two kinds of hook, marked in this module and listed from the marks (PRIMITIVES,
OPS; nothing else keeps a list of hook names):

- ``@primitive``: required. The set is what cannot be composed from the rest
  without losing speed or precision: creation and transfer (from_numpy,
  to_numpy, full, uniform, astype); elementwise arithmetic, comparison and
  where; one_hot; the transcendental functions the others are built from (exp, log,
  sqrt, erf, tanh, which no cheap composition gives to full precision);
  reductions (sum, mean and max: mean is kept so that a float32 mean may
  accumulate wider than its sum; argmax because no composition finds an index
  in one pass); movement (reshape, transpose, broadcast_to, contiguous);
  matmul, and conv1d and conv2d with their gradients (a composition needs the
  strided-slice primitives and would be an im2col copy of the input per call).
  The indexing, scan and remaining math primitives are specified in
  :mod:`fastnn.api.hookspec_index_math` and taken into this module's namespace.
- ``@op``: optional (their specs are in :mod:`fastnn.api.hookspec_ops`,
  :mod:`fastnn.api.hookspec_layers` and :mod:`fastnn.api.hookspec_optim`, taken into
  this module's namespace). Each has a composite of the same name in
  :mod:`fastnn.api.composite`, written with primitives (and other ops), that
  the registry binds for a backend without it; a backend implements an op
  only to be faster or more precise. The activations are ops, and so are the
  fused kernels (softmax, cross-entropy, bias + activation, optimizer steps).

A backend module can list submodules that hold more of its hooks in
``fastnn_hook_modules`` (dotted names); the registry registers each, so the
package need not re-export their names.
"""

from __future__ import annotations

from typing import Any

from fastnn.api import hookspec_index_math as _index_math
from fastnn.api import hookspec_layers as _layer_ops
from fastnn.api import hookspec_ops as _ops
from fastnn.api import hookspec_optim as _optim_ops
from fastnn.api.spec_marks import (  # noqa: F401  (backends import hookimpl from here)
    PROJECT,
    Array,
    Axes,
    Shape,
    hookimpl,
    hookspec,
    op,
    primitive,
)

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


@primitive
def from_numpy(array: Any, device_index: int) -> Array:
    """Copy a host NumPy array (any layout) onto device ``device_index``; keep its dtype."""


@primitive
def to_numpy(x: Array) -> Any:
    """Return ``x`` as a host NumPy array (a copy unless the array already lives on the host)."""


@primitive
def full(shape: Shape, value: float, dtype: str, device_index: int) -> Array:
    """A new array of ``shape`` filled with ``value``."""


@primitive
def uniform(shape: Shape, dtype: str, device_index: int, seed: int) -> Array:
    """Uniform samples in [0, 1). The same ``seed`` gives the same array on one backend."""


@primitive
def astype(x: Array, dtype: str) -> Array:
    """Convert to ``dtype`` (a copy). Float to int truncates toward zero."""


# ---------------------------------------------------------------- elementwise unary
# Each takes and returns one array of the same shape and dtype.


@primitive
def neg(x: Array) -> Array:
    """-x."""


@primitive
def exp(x: Array) -> Array:
    """e**x."""


@primitive
def log(x: Array) -> Array:
    """Natural log; log(0) = -inf, log(<0) = nan."""


@primitive
def sqrt(x: Array) -> Array:
    """Square root; nan for x < 0."""


@primitive
def abs(x: Array) -> Array:
    """|x|."""


@primitive
def sign(x: Array) -> Array:
    """-1, 0 or 1 (nan stays nan)."""


@primitive
def erf(x: Array) -> Array:
    """The error function."""


@primitive
def tanh(x: Array) -> Array:
    """Hyperbolic tangent."""


# ---------------------------------------------------------------- elementwise binary
# NumPy broadcasting; both operands have the same dtype; the result has it too.
# ``b`` may also be a Python float or int: then it is a scalar of ``a``'s dtype
# (the core never passes a float scalar with an integer ``a``).


@primitive
def add(a: Array, b: Array) -> Array:
    """a + b."""


@primitive
def sub(a: Array, b: Array) -> Array:
    """a - b."""


@primitive
def mul(a: Array, b: Array) -> Array:
    """a * b."""


@primitive
def div(a: Array, b: Array) -> Array:
    """a / b (IEEE: x/0 = +-inf, 0/0 = nan)."""


@primitive
def pow(a: Array, b: Array) -> Array:
    """a ** b. Integers stay integers and wrap on overflow (as NumPy's); for b < 0 the
    result is PyTorch's truncated 1 / a**|b|: 1 for a == 1, +-1 for a == -1, else 0."""


@primitive
def maximum(a: Array, b: Array) -> Array:
    """Elementwise max; nan if either is nan."""


@primitive
def minimum(a: Array, b: Array) -> Array:
    """Elementwise min; nan if either is nan."""


@primitive
def greater(a: Array, b: Array) -> Array:
    """a > b as a bool array."""


@primitive
def less(a: Array, b: Array) -> Array:
    """a < b as a bool array."""


@primitive
def equal(a: Array, b: Array) -> Array:
    """a == b as a bool array."""


@primitive
def where(cond: Array, a: Array, b: Array) -> Array:
    """a where cond (bool) else b; the three broadcast together; a and b share a dtype.

    ``b`` may be a Python scalar, as for the binary ops.
    """


# ---------------------------------------------------------------- reductions


@primitive
def sum(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Sum over ``axis`` (tuple, possibly empty; None = all). Size-0 axes sum to 0."""


@primitive
def mean(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Mean over ``axis``. Size-0 axes give nan; inf where the sum in x's dtype
    overflows (as NumPy and PyTorch give), however the backend accumulates."""


@primitive
def max(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Max over ``axis``; nan propagates. The core never asks for a size-0 axis."""


@primitive
def argmax(x: Array, axis: int) -> Array:
    """Index of the first maximum along one axis, as int64; the axis is removed."""


# ---------------------------------------------------------------- data movement


@primitive
def reshape(x: Array, shape: Shape) -> Array:
    """Same elements in C order with a new shape (same size). May return a view."""


@primitive
def transpose(x: Array, axes: Shape) -> Array:
    """Permute axes (a full permutation). May return a view."""


@primitive
def broadcast_to(x: Array, shape: Shape) -> Array:
    """Broadcast ``x`` to ``shape`` (NumPy rules). May return a read-only view."""


@primitive
def contiguous(x: Array) -> Array:
    """A C-contiguous array with the same values (a copy if ``x`` is not one)."""


@primitive
def one_hot(indices: Array, num_classes: int, dtype: str) -> Array:
    """(..., num_classes) array with 1 at each integer index and 0 elsewhere.

    The core checks that every index is in [0, num_classes).
    """


# ---------------------------------------------------------------- linear algebra and convolution


@primitive
def matmul(a: Array, b: Array) -> Array:
    """Matrix product with NumPy ``matmul`` semantics (batched, broadcasting, 1-D promotion).

    Every dtype: int32/int64 products wrap as NumPy's do; bool @ bool is an OR of ANDs.
    """


@primitive
def conv1d(
    x: Array, weight: Array, stride: int, padding: int, dilation: int, groups: int
) -> Array:
    """1-D cross-correlation (PyTorch's conv1d, no bias).

    x: (N, C_in, L); weight: (C_out, C_in // groups, K); zero padding of
    ``padding`` on both ends. Returns (N, C_out, L_out) with
    L_out = (L + 2*padding - dilation*(K-1) - 1) // stride + 1.
    """


@primitive
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


@primitive
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


# conv2d: stride and dilation are (height, width) pairs; padding is
# ((top, bottom), (left, right)) zeros, so that "same" padding with an even kernel
# and causal padding need no copy. H_out = (H + top + bottom - dilation_h*(KH-1) - 1)
# // stride_h + 1, W_out likewise; the core guarantees both are >= 1.


@primitive
def conv2d(x: Array, weight: Array, stride: Shape, padding: tuple, dilation: Shape,
           groups: int) -> Array:
    """2-D cross-correlation (PyTorch's conv2d, no bias).

    x: (N, C_in, H, W); weight: (C_out, C_in // groups, KH, KW). Returns
    (N, C_out, H_out, W_out):
    out[n, o, i, j] = sum_{c, a, b} w[o, c, a, b] *
    xpad[n, g*C_in/groups + c, i*stride_h + a*dilation_h, j*stride_w + b*dilation_w]
    for o in group g, where xpad is x with the zero padding.
    """


@primitive
def conv2d_grad_input(grad_out: Array, weight: Array, input_size: Shape, stride: Shape,
                      padding: tuple, dilation: Shape, groups: int) -> Array:
    """Gradient of conv2d with respect to x: (N, C_in, H, W), ``input_size`` = (H, W)."""


@primitive
def conv2d_grad_weight(x: Array, grad_out: Array, kernel_size: Shape, stride: Shape,
                       padding: tuple, dilation: Shape, groups: int) -> Array:
    """Gradient of conv2d with respect to the weight: (C_out, C_in // groups, KH, KW)."""


# ---------------------------------------------------------------- indexing, scans, more math
# primitives too, specified in their own module to keep this one small; taken into this
# namespace here, so that PRIMITIVES keeps their place in the order
globals().update({name: spec for name, spec in vars(_index_math).items()
                  if getattr(spec, "fastnn_role", None) == "primitive"})


# the optional ops, into this namespace: one spec module for pluggy and for backends
for _module in (_ops, _layer_ops, _optim_ops):
    globals().update({name: spec for name, spec in vars(_module).items()
                      if getattr(spec, "fastnn_role", None) == "op"})


def _by_role(role: str) -> list[str]:
    """The names of the specs marked ``role``, in the order this module defines them."""
    return [name for name, spec in list(globals().items())
            if getattr(spec, "fastnn_role", None) == role]


PRIMITIVES = _by_role("primitive")  # required of every backend
OPS = _by_role("op")  # optional; composed in the core when a backend lacks them
HOOKS = PRIMITIVES + OPS
FUSED = OPS  # the name these had before ops and fused hooks were one list

# the activations a backend's bias_act and bias_act_backward must accept; any other kind
# (elu, mish, ...) takes the composite: the bias add, then that activation's own op
BIAS_ACT_KINDS = ("identity", "relu", "leaky_relu", "sigmoid", "tanh", "silu", "gelu", "softplus")
# the activations that are hooks of their own: the one list the rules, the tape ops and
# the backends' kernels read (a kind's position is its code in the OpenCL/CUDA kernels)
ACTIVATION_HOOKS = tuple(kind for kind in BIAS_ACT_KINDS if kind != "identity")
