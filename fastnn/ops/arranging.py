"""PyTorch's NumPy-style shape helpers, each a composite of split/cat/reshape/sum:
``tensor_split``, ``hsplit``/``vsplit``/``dsplit``, ``hstack``/``vstack``/``dstack``/
``column_stack``, ``ravel``, ``tile``, ``split_with_sizes``, ``sum_to_size``,
``reshape_as``, ``ndimension``, and the creators ``logspace`` and ``asarray``."""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.ops import movement, shaping
from fastnn.ops.creation import linspace
from fastnn.ops.joining import cat, split
from fastnn.ops.movement import view_op
from fastnn.ops.selecting import slice_tensor
from fastnn.ops.shaping import axis_index
from fastnn.ops.sorting import check_tensor
from fastnn.ops.spelling import sizes_of
from fastnn.ops.structure_grid import atleast_1d, atleast_2d, atleast_3d
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor


def _piece(x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    starts = tuple(start if d == axis else 0 for d in range(x.ndim))
    stops = tuple(max(start, stop) if d == axis else n for d, n in enumerate(x.shape))
    piece = slice_tensor(x, starts, stops, (1,) * x.ndim)
    return movement.same_view(x) if piece is x else piece  # a view, never x (PyTorch's)


def _cuts(op: str, indices_or_sections, n: int) -> list:
    """The boundaries [0, ..., n] of the pieces: n split into ``sections`` pieces (the
    first n % sections one longer), or cut before each of ``indices`` (Python slicing)."""
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dtype.is_floating or spec.ndim > 1:
            raise TypeError(f"{op}: a tensor of indices_or_sections must be an int64 0-d or "
                            f"1-d tensor, got {spec.dtype.name} of shape {spec.shape}")
        spec = spec.item() if spec.ndim == 0 else [int(i) for i in spec.tolist()]
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        if spec < 1:
            raise ValueError(f"{op}: the number of sections must be at least 1, got {spec}")
        size, extra = divmod(n, int(spec))
        return [0] + [i * size + min(i, extra) for i in range(1, int(spec))] + [n]
    if not isinstance(spec, (list, tuple)) or not all(
            isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in spec):
        raise TypeError(f"{op}: indices_or_sections must be an int or a list of ints, got "
                        f"{spec!r}")
    return [0] + [min(max(int(i) + n if i < 0 else int(i), 0), n) for i in spec] + [n]


@public(method=True, top=True)
def tensor_split(x: Tensor, indices_or_sections, dim=0) -> tuple:
    """Views of x along ``dim``: ``sections`` (an int) pieces as equal as can be (the first
    ``n % sections`` one longer), or the pieces between the given ``indices``."""
    check_tensor("tensor_split", x)
    axis = axis_index("tensor_split", dim, x.ndim)
    cuts = _cuts("tensor_split", indices_or_sections, x.shape[axis])
    return tuple(_piece(x, axis, a, b) for a, b in zip(cuts, cuts[1:]))


def _np_split(op: str, x: Tensor, spec, axis: int, min_dims: int) -> tuple:
    check_tensor(op, x)
    if x.ndim < min_dims:
        raise ValueError(f"{op}: expects a tensor with at least {min_dims} dims, got "
                         f"{x.ndim} (shape {x.shape})")
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool) and (
            spec < 1 or x.shape[axis] % spec):
        raise ValueError(f"{op}: dim {axis} of size {x.shape[axis]} cannot be split into "
                         f"{spec} equal sections; give a divisor or a list of indices")
    return tensor_split(x, spec, axis)


@public(method=True, top=True)
def hsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split along dim 1 (dim 0 of a 1-d tensor) into equal sections or at indices."""
    axis = 1 if getattr(x, "ndim", 0) > 1 else 0
    return _np_split("hsplit", x, indices_or_sections, axis, 1)


@public(method=True, top=True)
def vsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split along dim 0 of a tensor of 2 or more dims (equal sections or at indices)."""
    return _np_split("vsplit", x, indices_or_sections, 0, 2)


@public(method=True, top=True)
def dsplit(x: Tensor, indices_or_sections) -> tuple:
    """Split along dim 2 of a tensor of 3 or more dims (equal sections or at indices)."""
    return _np_split("dsplit", x, indices_or_sections, 2, 3)


def _listed(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError(f"{op}: expected a non-empty list or tuple of tensors, got "
                        f"{type(tensors).__name__}")
    for t in tensors:
        check_tensor(op, t)
    return list(tensors)


def _each(fn, tensors) -> list:
    return [fn(t) for t in tensors]


@public(top=True)
def hstack(tensors) -> Tensor:
    """Tensors joined along dim 1 (along dim 0 when they are 1-d; 0-d ones count as 1-d)."""
    tensors = _each(atleast_1d, _listed("hstack", tensors))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


@public(top=True, aliases=("row_stack",))
def vstack(tensors) -> Tensor:
    """Tensors joined along dim 0 after making each at least 2-d ((n,) -> (1, n))."""
    return cat(_each(atleast_2d, _listed("vstack", tensors)), 0)


@public(top=True)
def dstack(tensors) -> Tensor:
    """Tensors joined along dim 2 after making each at least 3-d ((n,) -> (1, n, 1),
    (m, n) -> (m, n, 1))."""
    return cat(_each(atleast_3d, _listed("dstack", tensors)), 2)


@public(top=True)
def column_stack(tensors) -> Tensor:
    """Tensors as columns side by side: 0-d and 1-d ones become (n, 1) columns, the rest
    are joined along dim 1 as they are."""
    tensors = _listed("column_stack", tensors)
    columns = [movement.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return cat(columns, 1)


@public(method=True, top=True)
def ravel(x: Tensor) -> Tensor:
    """x as one dim, in C order (a view where the layout allows, as ``reshape(-1)``)."""
    check_tensor("ravel", x)
    return movement.reshape(x, (-1,))


@public(method=True, top=True)
def tile(x: Tensor, dims) -> Tensor:
    """x repeated ``dims[i]`` times along dim i; fewer counts than dims are padded with 1s
    in front, more dims than x has are new leading dims (NumPy's tile)."""
    check_tensor("tile", x)
    dims = tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    dims = (1,) * (x.ndim - len(dims)) + dims
    return shaping.repeat(x, *dims)


@public(method=True, top=True, aliases=("unsafe_split_with_sizes",))
def split_with_sizes(x: Tensor, split_sizes, dim=0) -> tuple:
    """Pieces of x along ``dim`` of the given sizes (which must sum to that dim's size)."""
    check_tensor("split_with_sizes", x)
    if not isinstance(split_sizes, (list, tuple)):
        raise TypeError(f"split_with_sizes: split_sizes must be a list of ints, got "
                        f"{type(split_sizes).__name__}")
    return split(x, list(split_sizes), dim)


@public(method=True, functional=False)
def sum_to_size(x: Tensor, *size) -> Tensor:
    """x summed down to ``size`` (a shape x broadcasts from, as a gradient is reduced to
    its input's shape): leading dims summed away, dims of size 1 summed with keepdim."""
    size = sizes_of("sum_to_size", size)
    lead = x.ndim - len(size)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(size, x.shape[lead:])):
        raise RuntimeError(f"sum_to_size: size {tuple(size)} is not expandable to the "
                           f"tensor's shape {x.shape}")
    out = movement.sum(x, tuple(range(lead))) if lead else x
    keep = tuple(d for d, (n, m) in enumerate(zip(size, out.shape)) if n == 1 and m != 1)
    return movement.sum(out, keep, True) if keep else out


@view_op(method=True, functional=False)
def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """x reshaped to other's shape (a view where the layout allows)."""
    return movement.reshape(x, other.shape)


@public(method=True, functional=False)
def ndimension(x: Tensor) -> int:
    """The number of dims (``x.dim()``)."""
    return x.ndim


@public(top=True, functional=False)
def logspace(start, end, steps, base=10.0, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` values base**t for t evenly spaced from start to end, both included (the
    default float dtype unless given)."""
    steps = integer("logspace", "steps", steps, 0)
    exponents = linspace(start, end, steps, dtype=dtypes.float64).numpy()
    dtype = dtypes.float_or_default(dtype)
    values = np.power(float(base), exponents)
    if not dtype.is_floating:
        values = np.trunc(values)
    return tensor(values.astype(dtype.numpy), dtype=dtype, device=device,
                  requires_grad=requires_grad)


@public(top=True, functional=False)
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor: a Tensor itself when no dtype, device or copy asks for a new
    one (as PyTorch, sharing its memory), else a new tensor holding its values."""
    if isinstance(obj, Tensor):
        same = (dtype is None or dtypes.as_dtype(dtype) is obj.dtype) and (
            device is None or str(device) == str(obj.device))
        if same and not copy:
            return obj.requires_grad_(True) if requires_grad else obj
        if copy is False:
            raise ValueError("asarray: copy=False, but a different dtype or device needs a "
                             "copy")
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
