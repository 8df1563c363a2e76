"""The optional hooks (``@op``) of the hook specification: activations, fused kernels,
collectives, joining, writes through views, step capture and transfers; the layers' hooks
are in :mod:`fastnn.api.hookspec_layers`, the optimizer steps in
:mod:`fastnn.api.hookspec_optim`.

Each has a composite of the same name in :mod:`fastnn.api.composite` that the registry
binds for a backend without it. :mod:`fastnn.api.hookspec` (the primitives) takes these
into its namespace, so the spec is still one module to pluggy and to backends.
"""

from __future__ import annotations

from typing import Any

from fastnn.api.spec_marks import Array, op

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
def relu_backward(out: Array, grad: Array) -> Array:
    """dL/dx of ``out = relu(x)`` (as the ``relu`` hook returned it), given grad = dL/dout
    (out's shape, possibly a broadcast view): grad, except 0 where out is 0 (x <= 0). A NaN
    x (out NaN) passes grad, as PyTorch's threshold_backward (out <= 0 gives 0)."""


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
def cross_entropy_loss(logits: Array, targets: Array, ignore_index: int, reduction: str,
                       label_smoothing: float) -> tuple[Array, Array, Array | None]:
    """PyTorch's ``cross_entropy(logits, targets, ignore_index=, reduction=,
    label_smoothing=)`` without class weights (``aten::cross_entropy_loss``): logits (N, C),
    int targets (N,).

    A kept row's loss is (1 - s) (-log p[t]) + s / C * sum_c (-log p[c]), s =
    ``label_smoothing`` in [0, 1]. A row whose target equals ``ignore_index`` is left out:
    its loss is 0 (whatever its logits) and its target is never read as an index; another
    target outside [0, C) gives its row a NaN loss, as ``softmax_cross_entropy``.

    Returns (loss, probs, total). ``reduction`` "none": loss per row (N,), total None;
    "sum": the rows' sum, 0-d; "mean": that sum / total, 0-d (NaN when every row is
    ignored, as PyTorch). probs: the softmax probabilities (N, C); total: the number of
    rows kept, a 0-d array of the logits' dtype ("sum" and "mean"), as
    ``nll_loss_forward``'s total_weight. One hook where its composite makes five to
    fifteen calls.
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
    every axis but the last (bias's shape). relu's derivative is 0 where
    ``out == 0`` (z <= 0) and 1 elsewhere, so that a NaN input passes the
    gradient, as PyTorch's threshold_backward and the composite do.
    """


@op
def linear(x: Array, weight: Array) -> Array:
    """x @ weight.T: x (..., in) with any leading axes (none: x (in,)), weight (out, in),
    floats of one dtype, any strides; returns (..., out). PyTorch's linear without its bias
    (the core adds that with ``bias_act``): one hook, where its composite makes a transposed
    view of the weight and, for leading axes past one, folds them into one around the
    ``matmul`` (four calls, each one shadow mode checks and a GPU's host launches)."""


@op
def linear_grad_weight(x: Array, grad: Array) -> Array:
    """The weight gradient of ``out = linear(x, weight)``: grad = dL/dout (..., out) and x
    (..., in) with the same leading axes (any strides, ``grad`` possibly a broadcast view),
    their leading axes folded into one, grad^T x: (out, in), zeros where the leading axes
    hold no element."""


@op
def softmax_cross_entropy_backward(probs: Array, targets: Array, grad: Array) -> Array:
    """dL/dlogits of ``softmax_cross_entropy``: (probs - one_hot) * grad.

    probs (N, C) as that hook returned them, int targets (N,), grad (N,)
    (dL/dloss per row; may be a broadcast view with stride 0). A target
    outside [0, C) makes its whole row NaN, as its loss is, so that an
    optimizer step cannot go ahead on finite, plausible gradients.
    """


@op
def cross_entropy_loss_backward(probs: Array, targets: Array, grad: Array, ignore_index: int,
                                reduction: str, label_smoothing: float,
                                total: Array | None) -> Array:
    """dL/dlogits of ``cross_entropy_loss``: (probs - (1 - s) one_hot - s / C) * g, s =
    ``label_smoothing``, where g is ``grad`` per row (N,) for reduction "none", the 0-d
    ``grad`` for "sum" and ``grad / total`` for "mean" (``total`` as the forward returned
    it), and 0 on the rows whose target equals ``ignore_index``, even where every row is
    (their gradient is probs * 0: NaN only where a probability is, as PyTorch's nll_loss
    and log_softmax backward give); ``softmax_cross_entropy_backward``'s NaN rows for the
    other targets outside [0, C). ``grad`` may be a broadcast view."""


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


# ---------------------------------------------------------------- linear algebra
# Batches of square matrices: ``a`` is (..., n, n) with n >= 1 and a non-empty batch (the
# core answers empty inputs itself), float32 or float64 (the core computes half precision
# in float32), any layout. The composites are Gauss-Jordan elimination with partial
# pivoting, n steps of primitives: right for small n; a backend with LAPACK-like
# routines implements these for speed. The decompositions (qr, eigh, svd) take the same
# batches (qr and svd any m x n) and have Householder and Jacobi composites
# (fastnn/api/composite_linalg_decomp.py), equally meant for small matrices.


@op
def linalg_solve(a: Array, b: Array) -> tuple[Array, Array]:
    """X with ``a @ X = b`` for each matrix of the batch, by LU with partial pivoting.

    ``b`` is (..., n, k) with ``a``'s batch dims (the core broadcasts them and makes a
    vector a column) and dtype. Returns ``(x, info)``: x of ``b``'s shape and dtype, and
    info, int32 of shape ``a.shape[:-2]``: 0 where the matrix was solved, else LAPACK
    getrf's info: the 1-based index of the first exactly zero pivot U[i-1, i-1]. Where info
    is not 0, x is unspecified (inf or nan, as LAPACK's). Must not raise for a singular
    matrix: the core raises the user's error from info. The core builds inv from this
    (``b`` the identity) and the gradients of inv, solve, det and slogdet.
    """


@op
def linalg_slogdet(a: Array) -> tuple[Array, Array]:
    """``(sign, logabsdet)`` of each matrix's determinant, both of ``a``'s dtype and shape
    ``a.shape[:-2]``: det = sign * exp(logabsdet). A singular matrix (an exactly zero
    pivot of LU with partial pivoting) gives sign 0 and logabsdet -inf."""


@op
def linalg_qr(a: Array, mode: str) -> tuple[Array, Array]:
    """``(q, r)``: the QR decomposition of each matrix of ``a`` (..., m, n), any m and n
    (the core answers empty inputs), by Householder reflections as LAPACK's geqrf/orgqr.

    ``mode`` is ``"reduced"`` (q (..., m, k), r (..., k, n), k = min(m, n)) or
    ``"complete"`` (q (..., m, m), r (..., m, n)); both of ``a``'s dtype, r upper
    triangular (exact zeros below the diagonal). The signs are LAPACK's: each reflection
    sends its column x (from the diagonal down) to ``-sign(x0) * |x|`` (``-|x|`` where
    x0 = 0), and a column with only zeros below the diagonal (the last one of a square
    matrix too) is left as it is, so r's diagonal may be negative, as numpy's and torch's.
    """


@op
def linalg_eigh(a: Array) -> tuple[Array, Array]:
    """``(w, v)``: the eigenvalues (..., n), ascending, and orthonormal eigenvectors
    (..., n, n), in columns, of each symmetric matrix of ``a`` (..., n, n); both of ``a``'s
    dtype. The core passes a symmetric matrix (built from the triangle the user named),
    so either triangle may be read. Each eigenvector's sign is unspecified (LAPACK's,
    cuSOLVER's and the composite's differ), as torch documents; a repeated eigenvalue's
    eigenvectors span its eigenspace in any orthonormal basis."""


@op
def linalg_svd(a: Array, full_matrices: bool) -> tuple[Array, Array, Array]:
    """``(u, s, vh)``: ``a = u @ diag(s) @ vh`` for each matrix of ``a`` (..., m, n),
    k = min(m, n): s (..., k) descending and >= 0; with ``full_matrices`` u (..., m, m)
    and vh (..., n, n), else u (..., m, k) and vh (..., k, n); all of ``a``'s dtype, u's
    columns and vh's rows orthonormal (a zero singular value's vectors complete the
    basis). The signs of each pair (u[:, i], vh[i]) are unspecified, as torch documents."""


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


# ---------------------------------------------------------------- transfer of many arrays


@op
def to_numpy_many(arrays: list) -> list:
    """Host NumPy arrays of ``arrays`` (backend arrays, on any of the backend's devices),
    in order: the same as ``[to_numpy(a) for a in arrays]``, but a device backend may
    start every copy before it waits once (one queue wait instead of one per array).
    Results may share memory (arrays that view one buffer may be read once and viewed
    on the host); a result that shares memory with another result is read-only. Shadow
    mode reads a call's inputs and outputs with it."""


@op
def to_numpy_views(arrays: list) -> list | None:
    """Host NumPy arrays of ``arrays``, as ``to_numpy_many`` gives them, except that where
    the device's buffers are host memory (a CPU OpenCL device, an integrated GPU) a result
    may be a read-only view of the device's own memory instead of a copy; or None where
    the backend views none of them (a device whose memory is not the host's: the caller
    reads with ``to_numpy_many``; the composite always returns None). A view shows what the
    device writes there later: the caller holds the arrays while it reads their views (so
    no buffer is freed and reused) and stops reading them before the next in-place hook
    (``assign``, a fused optimizer step) runs on their device. A result that is writable is
    a copy. Shadow mode reads with it first."""
