"""Reductions and data movement on tensors, recorded on the tape."""

from __future__ import annotations

import builtins
import functools
import math
import numbers

from fastnn.api import dtypes
from fastnn.api.args import flag, ints
from fastnn.api.errors import OutOfRangeError, ShapeError
from fastnn.api.layout import view_strides
from fastnn.autograd.engine import attach
from fastnn.autograd.grad_mode import is_anomaly_enabled, switches
from fastnn.ops.core import astype, broadcast_shape
from fastnn.ops.spelling import UNSET, dim_of, keep_of, sizes_by_name, sizes_of
from fastnn.ops.storage import copy_array, mark_view, source, whole
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor
from fastnn.ops.view_layout import is_contiguous, layout
from fastnn.settings import check_memory_format

_make = Tensor._make  # bound once: the hot paths skip the classmethod's lookup


def normalize_axis(op: str, axis, ndim: int, empty_is_all: bool = True):
    """None, an int or a sequence of ints -> None or a sorted tuple of non-negative axes.

    An empty sequence (``x.sum(dim=())``, ``dims=[]`` built in a loop) is None, every axis,
    as PyTorch's sum, mean, amax, var, norm... read it; ``empty_is_all=False`` keeps it ()
    for any and all, which PyTorch reads as no axis."""
    if axis is None:
        return None
    if type(axis) is int and -ndim <= axis < ndim:
        return (axis % ndim,)  # the common case, without the ABC checks below (0.5 us each)
    try:
        axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    except TypeError:
        raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}") from None
    if not axes:
        return None if empty_is_all else ()
    out, n = [], builtins.max(ndim, 1)  # a 0-d tensor has one axis-like position, as in PyTorch
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
        if not -n <= a < n:
            raise OutOfRangeError(f"{op}: axis {a} is out of range for a tensor with {ndim} dims")
        a = int(a) % n
        if a in out:
            raise ValueError(f"{op}: axis {a} is repeated in {axis}")
        out.append(a)
    if ndim == 0:
        return None  # axis 0 (or -1) of a 0-d tensor: the one element itself
    return tuple(sorted(out))


def _reduce(op: str, x: Tensor, axis, keepdims: bool) -> Tensor:
    shape = x._data.shape
    if axis is not None:
        axis = normalize_axis(op, axis, len(shape))
    if type(keepdims) is not bool:
        keepdims = flag(op, "keepdims", keepdims)
    dtype = x._dtype
    if dtype.is_floating:  # the common case: no conversion (and no DType.__eq__ below)
        pass
    elif op == "mean":  # as PyTorch: an integer mean has no dtype of its own
        raise TypeError(f"mean: defined on floating tensors, not {dtype.name} (as PyTorch); "
                        f"pass dtype=fnn.float32 or convert with .float()")
    elif dtype is not dtypes.int64 and op == "sum":
        # int64, as in NumPy and PyTorch: a count, and uint8..int32 sums that would
        # overflow (NumPy's backend summed int32 to int64 under an int32 label)
        x = x.to(dtypes.int64)
    data = getattr(x._device.ops, op)(x._data, axis, keepdims)
    out = _make(data, x._dtype, x._device)
    if not (x._requires_grad or switches.anomaly):
        return out
    if op == "max":
        return attach(out, op, (x,), (x._data, data), (shape, axis, keepdims, x._dtype.name))
    return attach(out, op, (x,), (), (shape, axis, keepdims))


@public(method=True, top=True)
def sum(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,
        dtype=None) -> Tensor:
    """Sum over ``dim`` (None = all); ``dtype=``: the input converted first, as PyTorch,
    and the result of that dtype (``dtype=fnn.uint8`` wraps modulo 256; with none, bool
    and integers narrower than int64 sum to int64)."""
    if dtype is not None:
        x = astype(x, dtype)
        if not x._dtype.is_floating and x._dtype is not dtypes.int64:
            return astype(sum(x, dim, keepdim, axis=axis, keepdims=keepdims), x._dtype)
    if dim is UNSET and axis is UNSET and keepdim is UNSET and keepdims is UNSET:
        return _reduce("sum", x, None, False)  # x.sum(): nothing to resolve
    if axis is UNSET and keepdim is UNSET and keepdims is UNSET:
        return _reduce("sum", x, dim, False)  # x.sum(dim): only dim given
    return _reduce("sum", x, dim_of("sum", dim, axis), keep_of("sum", keepdim, keepdims))


@public(method=True, top=True)
def mean(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET,
         dtype=None) -> Tensor:
    """Mean over ``dim`` (None = all) of a floating tensor; ``dtype=``: the input
    converted first (an integer tensor's mean needs one, as in PyTorch)."""
    if dtype is not None:
        x = astype(x, dtype)
    if dim is UNSET and axis is UNSET and keepdim is UNSET and keepdims is UNSET:
        return _reduce("mean", x, None, False)  # x.mean(): nothing to resolve
    if axis is UNSET and keepdim is UNSET and keepdims is UNSET:
        return _reduce("mean", x, dim, False)  # x.mean(dim): only dim given
    return _reduce("mean", x, dim_of("mean", dim, axis), keep_of("mean", keepdim, keepdims))


def max(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """Max over ``dim`` (None = all); ties share the gradient evenly."""
    axis, keepdims = dim_of("max", dim, axis), keep_of("max", keepdim, keepdims)
    axes = normalize_axis("max", axis, x.ndim)
    if any(x.shape[a] == 0 for a in (range(x.ndim) if axes is None else axes)):
        raise ShapeError(f"max: cannot reduce over a size-0 axis of a tensor of shape {x.shape}; "
                         f"give a dim whose size is not 0")
    return _reduce("max", x, axis, keepdims)


@public(method=True, top=True)
def argmax(x: Tensor, dim=UNSET, keepdim=UNSET, *, axis=UNSET, keepdims=UNSET) -> Tensor:
    """Index of the first maximum along ``dim`` as an int64 tensor (no gradient).

    No dim (or a 0-d ``x``) gives the index into the flattened tensor, as PyTorch and NumPy.
    """
    axis, keep = dim_of("argmax", dim, axis), keep_of("argmax", keepdim, keepdims)
    if keep:
        index = argmax(x, axis)
        if axis is None:
            return reshape(index, (1,) * x.ndim)
        a = normalize_axis("argmax", axis, x.ndim)
        return reshape(index, tuple(1 if a and i in a else n for i, n in enumerate(x.shape)))
    if axis is not None and not isinstance(axis, numbers.Integral):
        raise TypeError(f"argmax: axis must be an int or None, got {axis!r}")
    if axis is None or x.ndim == 0:
        normalize_axis("argmax", axis, x.ndim)
        x, axis = reshape(x, (-1,)), 0
    (axis,) = normalize_axis("argmax", axis, x.ndim)
    if x.shape[axis] == 0:
        raise ValueError(f"argmax: axis {axis} of shape {x.shape} is empty")
    return Tensor._make(x._device.ops.argmax(x._data, axis), dtypes.int64, x._device)


def _resolve_shape(op, shape, size: int) -> tuple:
    shape = ints(op, "shape", shape)
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise ValueError(f"{op}: bad shape {shape}: at most one -1 and no other negatives")
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"{op}: cannot infer -1 in {shape} for {size} elements")
        shape = shape[: unknown[0]] + (size // known,) + shape[unknown[0] + 1 :]
    elif known != size:
        raise ShapeError(f"{op}: cannot reshape {size} elements into shape {shape}")
    return shape


def _plain_sizes(shape: tuple) -> bool:
    """Whether ``shape`` is all non-negative Python ints (no -1 to infer, nothing to convert)."""
    for n in shape:
        if type(n) is not int or n < 0:
            return False
    return True


def same_view(x: Tensor) -> Tensor:
    """A new view of all of ``x`` in x's own shape, as PyTorch's no-op views are
    (``x.view(x.shape)``, ``x[...]``, ``x.expand(x.shape)``, a ``squeeze()`` with nothing
    to squeeze): never ``x`` itself, so that what is done to the view's own record
    (``requires_grad_``, ``detach_``, ``retain_grad``, an attribute) leaves x as it was,
    and a view of a leaf that requires grad has a history (``grad_fn``) as in PyTorch."""
    out = whole(x)
    if not (x._requires_grad or switches.anomaly):
        return out
    return attach(out, "reshape", (x,), (), x._data.shape)


def view_op(**where):
    """``public(**where)`` for a view op whose result may be its input itself (a no-op
    view): what is registered (the method, ``fastnn.NAME``, ``F.NAME``) gives a new view
    then (:func:`same_view`), as PyTorch's do; the module keeps the op itself, which gives
    x back, for the core's own calls (no tape node for nothing)."""
    def register(fn):
        def op(x, *args, **kwargs):
            out = fn(x, *args, **kwargs)
            return same_view(x) if out is x else out

        public(**where)(functools.update_wrapper(op, fn))
        return fn

    return register


@view_op(method=True, top=True)
def reshape(x: Tensor, *sizes, shape=None) -> Tensor:
    """Same elements, new shape (one -1 allowed): varargs, one sequence or ``shape=``."""
    shape = sizes_of("reshape", sizes) if shape is None else sizes_by_name(
        "reshape", sizes, "shape", shape)
    old = x._data.shape
    if not (type(shape) is tuple and _plain_sizes(shape) and math.prod(shape) == math.prod(old)):
        shape = _resolve_shape("reshape", shape, math.prod(old))
    if shape == old:
        return x
    ops = x._device.ops
    if x._view is None or view_strides(*layout(x)[:2], shape) is not None:
        out = mark_view(Tensor._make(ops.reshape(source(x), shape), x._dtype, x._device), x,
                        "reshape", shape)
    else:  # no view of this layout has that shape (PyTorch copies too): a new storage
        data = ops.contiguous(x._data)
        if data is x._data:  # a contiguous array of a non-contiguous layout: copy anyway
            data = copy_array(x)
        out = Tensor._make(ops.reshape(data, shape), x._dtype, x._device)
    if not (x._requires_grad or switches.anomaly):
        return out
    return attach(out, "reshape", (x,), (), old)


def strict_view(op: str, x: Tensor, shape) -> Tensor:
    """``x.view(shape)``: a view, or a RuntimeError when x's layout has none (PyTorch's)."""
    if x._view is None:  # a base is contiguous: every shape of its size is a view
        return reshape(x, shape)
    shape = _resolve_shape(op, shape, math.prod(x._data.shape))
    if shape != x.shape and \
            view_strides(*layout(x)[:2], shape) is None:
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (shape "
            f"{x.shape}, strides {layout(x)[1]}): at least one dimension spans across two "
            f"contiguous subspaces; use .reshape(...) instead (it copies where needed)")
    return reshape(x, shape)


@public(top=True)
def transpose(x: Tensor, dim0=None, dim1=None) -> Tensor:
    """Permute axes; ``transpose(x, d0, d1)`` exchanges two dims, as PyTorch's;
    ``transpose(x, axes)`` with one full permutation reorders them all, and no dims
    reverses them (``x.T``)."""
    axes, n = dim0, len(x._data.shape)
    if axes is None and dim1 is None:  # x.T: nothing to check
        axes = tuple(range(n - 1, -1, -1))
        out = Tensor._make(x._device.ops.transpose(source(x), axes), x._dtype, x._device)
        mark_view(out, x, "transpose", axes)
        return attach(out, "transpose", (x,), (), axes) if x._requires_grad else out
    if type(axes) is int and type(dim1) is int and -n <= axes < n and -n <= dim1 < n:
        order = list(range(n))  # x.transpose(0, 1): checked at once
        order[axes], order[dim1] = order[dim1], order[axes]
        axes = tuple(order)
        out = Tensor._make(x._device.ops.transpose(source(x), axes), x._dtype, x._device)
        mark_view(out, x, "transpose", axes)
        return attach(out, "transpose", (x,), (), axes) if x._requires_grad else out
    if dim1 is not None:  # two dims to exchange
        pair = ints("transpose", "dims", (axes, dim1))
        if any(not -n <= a < n for a in pair):
            raise OutOfRangeError(f"transpose: axes {pair} out of range for a tensor with {n} dims")
        order = list(range(n))
        order[pair[0] % n], order[pair[1] % n] = order[pair[1] % n], order[pair[0] % n]
        axes = tuple(order)
    if axes is None:
        axes = tuple(reversed(range(n)))
    given = ints("transpose", "axes", axes)
    if any(not -n <= a < n for a in given):
        raise OutOfRangeError(f"transpose: axes {given} out of range for a tensor with {n} dims")
    axes = tuple(a % n for a in given) if n else given
    if sorted(axes) != list(range(n)):
        raise ShapeError(f"transpose: {given} is not a permutation of the {n} axes")
    out = Tensor._make(x._device.ops.transpose(source(x), axes), x._dtype, x._device)
    mark_view(out, x, "transpose", axes)
    return attach(out, "transpose", (x,), (), axes)


@view_op(method=True, top=True)
def broadcast_to(x: Tensor, size) -> Tensor:
    """A view of ``x`` broadcast to ``size`` (NumPy rules; PyTorch's name of the shape)."""
    shape = ints("broadcast_to", "size", size)
    if broadcast_shape("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: cannot broadcast {x.shape} to {shape}")
    if shape == x.shape:
        return x
    out = Tensor._make(x._device.ops.broadcast_to(source(x), shape), x._dtype, x._device)
    mark_view(out, x, "broadcast_to", shape)
    return attach(out, "broadcast_to", (x,))


@public(method=True, functional=False)
def contiguous(x: Tensor, memory_format=None) -> Tensor:
    """``x`` itself when it is contiguous, else a C-contiguous copy (as PyTorch).
    ``memory_format`` is accepted and the result stays row-major (see
    :class:`fastnn.settings.memory_format`)."""
    check_memory_format("contiguous", memory_format)
    if x._view is None or is_contiguous(x):
        return x
    data = x._device.ops.contiguous(x._data)
    if data is x._data:  # the array happens to be contiguous: the copy must be a new one
        data = copy_array(x)
    return attach(Tensor._make(data, x._dtype, x._device), "contiguous", (x,))


@public()
def one_hot(targets: Tensor, num_classes: int = -1, dtype=dtypes.int64) -> Tensor:
    """(..., num_classes) with 1 at each target index, int64 as PyTorch's (``dtype=`` for
    another); checks that targets are in range."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    if num_classes == -1:  # as PyTorch: one more than the largest target (a host read)
        if not isinstance(targets, Tensor) or not targets.numel():
            raise ValueError("one_hot: num_classes=-1 needs a non-empty targets tensor")
        ops = targets._device.ops
        num_classes = builtins.max(int(ops.to_numpy(ops.max(targets._data, None, False))) + 1, 1)
    elif num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be an integer >= 1, or -1 to infer it, "
                         f"got {num_classes}")
    check_targets("one_hot", targets, num_classes)
    dtype = dtypes.as_dtype(dtype)
    data = targets._device.ops.one_hot(targets._data, int(num_classes), dtype.name)
    return Tensor._make(data, dtype, targets._device)


def check_targets(op: str, targets: Tensor, num_classes: int, ignore_index=None) -> None:
    """Integer class targets in [0, num_classes) (those equal to ``ignore_index`` aside),
    or a clear error."""
    if not isinstance(targets, Tensor) or targets._dtype not in (dtypes.int64, dtypes.int32):
        given = (f"a {targets._dtype.name} tensor" if isinstance(targets, Tensor) else
                 type(targets).__name__)
        raise TypeError(f"{op}: targets must be an int64 or int32 tensor of class indices, got "
                        f"{given}; make them with fnn.tensor(labels, dtype=fnn.int64)")
    backend = targets._device.backend
    if targets.numel() and (backend.record.host_memory or is_anomaly_enabled()):
        # NOTE: on a device this would be a host round trip per step, so device
        # backends check only in anomaly mode; their kernels must not read out
        # of bounds on a bad target (they give NaN instead).
        ops = targets._device.ops
        if ignore_index is None:
            low = -int(ops.to_numpy(ops.max(ops.neg(targets._data), None, False)))
            high = int(ops.to_numpy(ops.max(targets._data, None, False)))
        else:
            host = ops.to_numpy(targets._data)
            host = host[host != ignore_index]
            if not host.size:
                return
            low, high = int(host.min()), int(host.max())
        if low < 0 or high >= num_classes:
            also = "" if ignore_index is None else f" (or equal ignore_index={ignore_index})"
            raise OutOfRangeError(
                f"{op}: targets must be in [0, {num_classes}){also}, got values in "
                f"[{low}, {high}]"
            )
