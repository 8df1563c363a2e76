"""PyTorch's out-of-place writes into a view: ``diagonal_scatter``, ``select_scatter`` and
``slice_scatter`` give a copy of ``x`` whose diagonal / index / slice along a dim holds
``src``. Each is a clone written through the view, so the tape gives both gradients (x's
outside the view, src's inside) as for the in-place write it spells."""

from __future__ import annotations

from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _into(op: str, x: Tensor, src, view) -> Tensor:
    check_tensor(op, x)
    check_tensor(op, src)
    out = x.clone()
    target = view(out)
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"{op}: src must have the view's shape {tuple(target.shape)}, got "
                           f"{tuple(src.shape)}")
    target.copy_(src)
    return out


@public(method=True, top=True)
def diagonal_scatter(x: Tensor, src, offset=0, dim1=0, dim2=1) -> Tensor:
    """A copy of x whose ``diagonal(offset, dim1, dim2)`` is ``src``."""
    return _into("diagonal_scatter", x, src, lambda t: t.diagonal(offset, dim1, dim2))


@public(method=True, top=True)
def select_scatter(x: Tensor, src, dim, index) -> Tensor:
    """A copy of x whose ``select(dim, index)`` is ``src``."""
    return _into("select_scatter", x, src, lambda t: t.select(dim, index))


@public(method=True, top=True)
def slice_scatter(x: Tensor, src, dim=0, start=None, end=None, step=1) -> Tensor:
    """A copy of x whose slice ``start:end:step`` along ``dim`` is ``src``."""
    check_tensor("slice_scatter", x)
    axis = axis_index("slice_scatter", dim, x.ndim)
    key = (slice(None),) * axis + (slice(start, end, step),)
    return _into("slice_scatter", x, src, lambda t: t[key])
