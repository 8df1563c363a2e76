"""PyTorch's trapezoidal rule: ``trapezoid`` (alias ``trapz``) and ``cumulative_trapezoid``.

Along ``dim``, with samples y_0 .. y_{n-1} at points x_0 .. x_{n-1}:

    trapezoid = sum_i (x_{i+1} - x_i) (y_i + y_{i+1}) / 2

and ``cumulative_trapezoid`` is its running sum (n - 1 values). With spacing ``dx``
instead of points the formulas are PyTorch's: ``(sum(y) - (y_0 + y_{n-1}) / 2) * dx``
and ``cumsum(dx / 2 * (y_i + y_{i+1}))``. ``x`` is 1-D (one point per sample) or
broadcasts against y; integer inputs give the default float dtype, as PyTorch's.
"""

from __future__ import annotations

import numbers

from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.reduction import cumsum
from fastnn.ops.shaping import axis_index
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, zeros
from fastnn.ops.viewing import narrow, select


def _check(op: str, y, x, dx, dim) -> tuple[int, float | None]:
    """``dim`` as an index of y, and the spacing (None when ``x`` is given)."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}: y must be a Tensor, got {type(y).__name__}")
    if y.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    dim = axis_index(op, dim, y.ndim)
    if y.dtype.name == "bool":
        raise RuntimeError(f"{op}: received a bool input for `y`, but bool is not supported")
    if x is not None:
        if dx is not None:
            raise TypeError(f"{op}: give the points x or the spacing dx, not both")
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: x must be a Tensor of sample points, got "
                            f"{type(x).__name__}; pass a spacing as dx={x!r}")
        if x.dtype.name == "bool":
            raise RuntimeError(f"{op}: received a bool input for `x`, but bool is not "
                               "supported")
        return dim, None
    dx = 1 if dx is None else dx
    if isinstance(dx, bool) or not isinstance(dx, numbers.Real):
        raise RuntimeError(f"{op}: Currently, we only support dx as a real number, got {dx!r}")
    return dim, dx


def _spacings(op: str, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """x_{i+1} - x_i along ``dim``, shaped to broadcast against y's pairs, as PyTorch's."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point "
                               f"(x has {x.shape[0]}, y has {y.shape[dim]} along dim {dim})")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = movement.reshape(x, tuple(shape))
    elif x.ndim < y.ndim:
        x = movement.reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
    n = x.shape[dim]
    return ew.sub(narrow(x, dim, 1, n - 1), narrow(x, dim, 0, n - 1))


def _pair_sums(y: Tensor, dim: int) -> Tensor:
    n = y.shape[dim]
    return ew.add(narrow(y, dim, 0, n - 1), narrow(y, dim, 1, n - 1))


@public(top=True, functional=False, aliases=("trapz",))
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at points ``x`` or with
    spacing ``dx`` (default 1); y's shape without ``dim``. No samples give 0."""
    dim, spacing = _check("trapezoid", y, x, dx, dim)
    if y.shape[dim] == 0:  # as NumPy and PyTorch: zeros in y's dtype
        return zeros(y.shape[:dim] + y.shape[dim + 1:], dtype=y.dtype, device=y.device)
    if spacing is None:
        weighted = ew.mul(_pair_sums(y, dim), _spacings("trapezoid", y, x, dim))
        return ew.div(movement.sum(weighted, dim), 2.0)
    ends = ew.mul(ew.add(select(y, dim, 0), select(y, dim, -1)), 0.5)
    return ew.mul(ew.sub(movement.sum(y, dim), ends), spacing)


@public(top=True, functional=False)
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule: one value per
    interval (``dim`` one shorter than y's), at points ``x`` or with spacing ``dx``."""
    dim, spacing = _check("cumulative_trapezoid", y, x, dx, dim)
    if y.shape[dim] == 0:
        return ew.mul(y, 0.5)  # empty, in the dtype the non-empty case gives
    if spacing is None:
        weighted = ew.mul(_pair_sums(y, dim), _spacings("cumulative_trapezoid", y, x, dim))
        return ew.div(cumsum(weighted, dim), 2.0)
    return cumsum(ew.mul(spacing / 2.0, _pair_sums(y, dim)), dim)
