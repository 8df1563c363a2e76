"""More views, as PyTorch returns them (each shares its input's storage): ``narrow``,
``select``, ``diagonal``, ``unflatten``, ``movedim``, ``mT``; and what a tensor says of its
layout: ``stride()``, ``storage_offset()``, ``is_contiguous()``, ``data_ptr()``, ``_base``."""

from __future__ import annotations

import math

from fastnn.api.args import ints
from fastnn.api.errors import ShapeError
from fastnn.autograd.node_names import show_as
from fastnn.ops import movement, view_layout
from fastnn.ops.movement import view_op
from fastnn.ops.selecting import slice_tensor
from fastnn.ops.shaping import axis_index
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor
from fastnn.settings import check_memory_format


@view_op(method=True, top=True)
def narrow(x: Tensor, dim, start, length) -> Tensor:
    """The view ``x[..., start:start + length, ...]`` along ``dim`` (start may be < 0)."""
    axis = axis_index("narrow", dim, x.ndim)
    n = x.shape[axis]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"narrow: start {start} is out of range for dim {axis} of size {n}")
    start %= n if n else 1
    if length < 0 or start + length > n:
        raise ShapeError(f"narrow: start ({start}) + length ({length}) exceeds dim {axis} of "
                         f"size {n}")
    starts = tuple(start if d == axis else 0 for d in range(x.ndim))
    stops = tuple(start + length if d == axis else s for d, s in enumerate(x.shape))
    return slice_tensor(x, starts, stops, (1,) * x.ndim)


@public(method=True, top=True)
def narrow_copy(x: Tensor, dim, start, length) -> Tensor:
    """A copy of :func:`narrow`'s view (not sharing x's memory)."""
    return narrow(x, dim, start, length).clone()


@public(method=True, top=True)
def select(x: Tensor, dim, index) -> Tensor:
    """The view ``x[..., index, ...]`` along ``dim`` (that dim removed)."""
    axis = axis_index("select", dim, x.ndim)
    n = x.shape[axis]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of range for dim {axis} of size {n}")
    part = narrow(x, axis, int(index) % n, 1)
    return movement.reshape(part, x.shape[:axis] + x.shape[axis + 1:])


@public(method=True, top=True)
def diagonal(x: Tensor, offset=0, dim1=0, dim2=1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes as the last dim, a view where x's layout
    allows one (a strided slice of the flattened plane), else a copy."""
    a, b = axis_index("diagonal", dim1, x.ndim), axis_index("diagonal", dim2, x.ndim)
    if a == b:
        raise ValueError(f"diagonal: dim1 and dim2 are both {a}; give two different dims")
    rest = [d for d in range(x.ndim) if d not in (a, b)]
    moved = movement.transpose(x, tuple(rest + [a, b]))
    rows, cols = x.shape[a], x.shape[b]
    if offset >= 0:
        length = max(min(rows, cols - offset), 0)
        first = offset
    else:
        length = max(min(rows + offset, cols), 0)
        first = -offset * cols
    lead = moved.shape[:-2]
    flat = movement.reshape(moved, lead + (rows * cols,))
    if not length:
        return slice_tensor(flat, (0,) * flat.ndim, lead + (0,), (1,) * flat.ndim)
    starts = (0,) * len(lead) + (first,)
    stops = lead + (first + (length - 1) * (cols + 1) + 1,)
    return slice_tensor(flat, starts, stops, (1,) * len(lead) + (cols + 1,))


@view_op(method=True, top=True)
def unflatten(x: Tensor, dim, sizes) -> Tensor:
    """``dim`` split into ``sizes`` (one -1 allowed), a view."""
    axis = axis_index("unflatten", dim, x.ndim)
    sizes = ints("unflatten", "sizes", sizes)
    if sizes.count(-1) == 1:
        known = math.prod(n for n in sizes if n != -1)
        sizes = tuple(x.shape[axis] // known if n == -1 else n for n in sizes)
    if math.prod(sizes) != x.shape[axis]:
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to dim {axis}'s size "
                         f"{x.shape[axis]}")
    return movement.reshape(x, x.shape[:axis] + tuple(sizes) + x.shape[axis + 1:])


@public(method=True, top=True, aliases=("moveaxis",))
def movedim(x: Tensor, source, destination) -> Tensor:
    """The view of x with dims ``source`` moved to ``destination`` (ints or tuples)."""
    src = [axis_index("movedim", d, x.ndim) for d in ints("movedim", "source", source)]
    dst = [axis_index("movedim", d, x.ndim) for d in ints("movedim", "destination",
                                                            destination)]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"movedim: source {source} and destination {destination} must be "
                         "as many distinct dims")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    others = iter(d for d in range(x.ndim) if d not in src)
    order = tuple(next(others) if o is None else o for o in order)
    return show_as(movement.transpose(x, order), "PermuteBackward0", (x,))


def _mT(x: Tensor) -> Tensor:
    if x.ndim < 2:
        raise RuntimeError(f"mT: needs a tensor of at least 2 dims, got {x.ndim}")
    order = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return movement.transpose(x, order)


Tensor.mT = property(_mT, doc="The last two dims exchanged (a view), as PyTorch's x.mT.")


# ---------------------------------------------------------------- the layout


@public(method=True, functional=False)
def stride(x: Tensor, dim=None):
    """The strides in elements (a tuple, or one dim's), as PyTorch reports them."""
    strides = view_layout.layout(x)[1]
    return strides if dim is None else strides[axis_index("stride", dim, x.ndim)]


@public(method=True, functional=False)
def storage_offset(x: Tensor) -> int:
    """Where x's first element sits in its storage, in elements."""
    return view_layout.layout(x)[2]


@public(method=True, functional=False)
def is_contiguous(x: Tensor, memory_format=None) -> bool:
    """Whether x's elements lie in its storage in C order without gaps; with
    ``memory_format=fnn.channels_last`` (a 4-D x) or ``channels_last_3d`` (5-D), whether
    they lie in that order, channels last (PyTorch's rule: dims of size 1 take any
    stride)."""
    check_memory_format("is_contiguous", memory_format)
    if memory_format is None or memory_format.name in ("contiguous_format",
                                                       "preserve_format"):
        return view_layout.is_contiguous(x)
    rank = 4 if memory_format.name == "channels_last" else 5
    if x.ndim != rank:
        raise RuntimeError(f"is_contiguous: {memory_format!r} is for {rank}-D tensors, got "
                           f"{x.ndim}-D")
    order = (1,) + tuple(range(rank - 1, 1, -1)) + (0,)  # C, then W, H(, D), then N
    shape, strides = x.shape, x.stride()
    expected = 1
    for d in order:
        if shape[d] != 1 and strides[d] != expected:
            return False
        expected *= shape[d]
    return True


@public(method=True, functional=False)
def data_ptr(x: Tensor) -> int:
    """An integer naming x's first element's place in memory: equal for two tensors that
    start at the same element of the same storage (an identity, not a usable address)."""
    base = view_layout.base_of(x)
    return (id(base) << 40) + view_layout.layout(x)[2] * x._dtype.numpy.itemsize


class UntypedStorage:
    """What ``x.untyped_storage()`` gives: the bytes behind x and every view of its base,
    as far as code that compares storages asks (Hugging Face's ``save_pretrained`` finds
    shared weights by ``data_ptr()`` and ``nbytes()``). fastnn has no storage objects to
    index or resize; this one answers those questions and ``device``."""

    def __init__(self, base: Tensor):
        self._base = base

    def data_ptr(self) -> int:
        """The base's :meth:`Tensor.data_ptr`: equal for tensors of one storage."""
        return data_ptr(self._base)

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._base.numel() * self._base._dtype.numpy.itemsize

    size = nbytes  # (PyTorch's: an untyped storage's size is in bytes)

    def __len__(self) -> int:
        return self.nbytes()

    @property
    def device(self):
        return self._base.device

    def __repr__(self) -> str:
        return f"fastnn.UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


@public(method=True, functional=False)
def untyped_storage(x: Tensor) -> UntypedStorage:
    """x's storage (shared with its base and the base's other views), as bytes."""
    return UntypedStorage(view_layout.base_of(x))


def _base(x: Tensor):
    return x._view[view_layout.BASE] if x._view is not None else None


Tensor._base = property(_base, doc="The tensor whose storage this view shares, or None.")
