"""The required hooks (``@primitive``) for indexing, scans and the remaining math.

Kept beside :mod:`fastnn.api.hookspec` so that each spec module stays small; that
module takes these into its namespace, after its own primitives and in this order.
"""

from __future__ import annotations

from fastnn.api.spec_marks import Array, Axes, Shape, primitive

# ---------------------------------------------------------------- indexing, scans, more math
# Chosen by the rule above: a strided slice and its adjoint (no composition selects a
# sub-block without a gather of every element), gather and scatter_add (the pair every
# advanced index, embedding and their gradients reduce to: backward of one is the other),
# cumsum (a scan in one pass; a composition is a triangular matmul, O(n^2)), prod (a
# composition through exp(sum(log|x|)) loses precision and zeros), floor, sin and cos (no
# cheap composition reaches full precision; tan, ceil, round, trunc, %, // of floats and
# the other math compose from them), floor_divide (integer // needs exact integer
# division), and the bitwise operators on integers (no arithmetic composition).


@primitive
def slice(x: Array, starts: Shape, stops: Shape, steps: Shape) -> Array:
    """``x[starts[0]:stops[0]:steps[0], ...]``, one (start, stop, step) per axis.

    The core normalises them: 0 <= start <= stop <= x.shape[d] and step >= 1 (negative
    steps are a gather). A backend with strided arrays should return a view (no copy).
    """


@primitive
def slice_scatter(base: Array, src: Array, starts: Shape, stops: Shape, steps: Shape) -> Array:
    """A new array: ``base`` with ``src`` written into ``base[starts:stops:steps]``.

    The adjoint of :func:`slice` (its backward is ``slice_scatter(zeros, grad, ...)``).
    ``src`` has exactly that slice's shape and ``base``'s dtype; ``base`` is never changed.
    """


@primitive
def gather(x: Array, axis: int, index: Array) -> Array:
    """``out[i, j, k] = x[i, index[i, j, k], k]`` for axis 1 (NumPy take_along_axis).

    ``index`` is int64 with ``x``'s rank and ``index.shape[d] == x.shape[d]`` for every
    ``d != axis`` (the core slices and broadcasts to make it so); the result has
    ``index``'s shape and ``x``'s dtype. The core checks that indices lie in
    ``[0, x.shape[axis])`` on host-memory backends (and in anomaly mode); a device
    backend must never read out of bounds: an out-of-range index gives 0.
    """


@primitive
def scatter_add(base: Array, axis: int, index: Array, src: Array) -> Array:
    """A new array: ``base`` plus, for axis 1, ``src[i, j, k]`` added at ``[i, index[i, j, k], k]``.

    The adjoint of :func:`gather`. ``index`` (int64) and ``src`` share a shape, which
    matches ``base``'s on every axis but ``axis``; repeated indices accumulate, in the
    order of their entries along ``axis`` (as NumPy's ``add.at``), so that the same inputs
    give the same bits on every call: ``fnn.compile``'s first-replay check compares bit
    for bit and refuses a step whose sums change from call to call (atomic float adds
    do). An out-of-range index is skipped.
    """


@primitive
def cumsum(x: Array, axis: int) -> Array:
    """Inclusive running sum along ``axis``; same shape and dtype (bool is never passed).

    A float running sum must not drift with the length of the run (rounded to float32 at
    each step, 2**15 times 0.1 ends ~1e-3 off): sum in a wider type (PyTorch's CPU kernel
    sums in double), with compensation, or as a tree; the conformance suite checks a long
    run against the exact sum.
    """


@primitive
def prod(x: Array, axis: Axes, keepdims: bool) -> Array:
    """Product over ``axis`` (tuple, possibly empty; None = all). Size-0 axes give 1."""


@primitive
def floor(x: Array) -> Array:
    """The largest integer <= x (float dtypes; nan and inf stay)."""


@primitive
def sin(x: Array) -> Array:
    """Sine (radians)."""


@primitive
def cos(x: Array) -> Array:
    """Cosine (radians)."""


@primitive
def floor_divide(a: Array, b: Array) -> Array:
    """a // b rounded toward -inf, as NumPy; integer operands only (the core computes a
    float ``//`` as floor(a / b)). An integer divided by 0 gives 0, as NumPy does."""


@primitive
def bitwise_and(a: Array, b: Array) -> Array:
    """a & b on integer or bool arrays (``b`` may be a Python int or bool)."""


@primitive
def bitwise_or(a: Array, b: Array) -> Array:
    """a | b on integer or bool arrays."""


@primitive
def bitwise_xor(a: Array, b: Array) -> Array:
    """a ^ b on integer or bool arrays."""
