"""What an index key means, as NumPy and PyTorch read it: ``...`` expanded, masks split
into index tensors, host data kept on the host for its range check, and PyTorch's rules
for the keys NumPy reads otherwise (a list holding sequences is a tuple; a 0-d bool mask
adds an axis). :mod:`fastnn.ops.indexing` lowers what this finds to primitives."""

from __future__ import annotations

import builtins
import numbers
import warnings

import numpy as np

from fastnn.api import dtypes
from fastnn.api.user_warning import warn_user
from fastnn.ops.selecting import as_index
from fastnn.ops.tensor import Tensor


def is_advanced(item) -> bool:
    return isinstance(item, (Tensor, list, np.ndarray)) and not isinstance(item, bool)


def on_device(item, x: Tensor) -> bool:
    """Whether an index is a tensor that stays where it is (x's own device), not host data."""
    return isinstance(item, Tensor) and (item._device == x._device or
                                         not item._device.backend.record.host_memory)


def sequence_as_tuple(key, stacklevel: int) -> bool:
    """PyTorch's rule (NumPy's before 1.23): a list of fewer than 32 items of which one is
    a list, a tuple, a tensor, an array, a slice, ``...`` or None indexes as the tuple of
    its items (``x[[[0, 1], [1, 0]]]`` is ``x[[0, 1], [1, 0]]``), with PyTorch's warning
    that this is deprecated; a list of ints is one index."""
    if type(key) is not list or len(key) >= 32 or not any(
            item is None or item is Ellipsis or isinstance(
                item, (list, tuple, builtins.slice, Tensor, np.ndarray)) for item in key):
        return False
    warnings.warn("indexing with a list that holds lists, tensors, slices, ... or None is "
                  "deprecated: it indexes as the tuple of its items, as in PyTorch; write "
                  "x[tuple(seq)] for that, or x[fnn.tensor(seq)] for one index tensor",
                  UserWarning, stacklevel=stacklevel)
    return True


def byte_mask(item: Tensor) -> Tensor:
    """A uint8 index tensor as the bool mask PyTorch reads it as, with PyTorch's warning
    that this is deprecated (int8 and int16 index tensors are refused by as_index)."""
    warn_user("indexing with dtype uint8 is deprecated (as in PyTorch, the uint8 tensor is "
              "read as a bool mask); use a bool mask instead: x[mask.bool()]")
    return item != 0


def _is_byte(item) -> bool:
    return isinstance(item, Tensor) and item._dtype is dtypes.uint8


def bytes_as_masks(key, value):
    """``key`` of ``x[key] = value`` with each uint8 tensor in it (the key, or an item of a
    tuple key) read as a bool mask, once (the assignment indexes with the key more than
    once). As PyTorch 2.13: a scalar value (a number or a 0-d tensor) is refused there,
    since its masked_fill_ takes bool masks only; a tensor of values is written."""
    items = key if type(key) is tuple else (key,)
    if not builtins.any(_is_byte(k) for k in items):
        return key
    if not isinstance(value, Tensor) or value.ndim == 0:
        raise RuntimeError("index assignment: masked_fill_ only supports boolean masks, but "
                           "got mask with dtype uint8 (as in PyTorch); use x[mask.bool()] = v")
    items = tuple(byte_mask(k) if _is_byte(k) else k for k in items)
    return items if type(key) is tuple else items[0]


def zero_d_mask(key) -> bool:
    """Whether ``key`` is a 0-d bool tensor: PyTorch's ``x[mask]`` is then x with a new
    leading axis, kept (size 1) where the mask is True, empty where False."""
    return isinstance(key, Tensor) and key.ndim == 0 and key._dtype is dtypes.bool_


def zero_d_int(item):
    """``item`` as PyTorch reads it: a 0-d integer tensor (not uint8, not bool) is the int
    it holds, so that ``x[i]`` with ``i = fnn.tensor(1)`` (an argmax, a loop counter) is a
    select, a view of x as with ``x[1]``, not a copy; any other item is returned as is."""
    if isinstance(item, Tensor) and not item._data.shape and item._dtype.is_integer and \
            item._dtype is not dtypes.uint8:
        return int(item.item())
    if type(item) is np.ndarray and not item.shape and item.dtype.kind == "i":
        return int(item)  # a 0-d NumPy integer array, as PyTorch reads it too
    return item


def pytorch_key(x: Tensor, key, stacklevel: int) -> tuple:
    """(x, key) with PyTorch's readings where NumPy's differ: a list holding sequences,
    slices, ``...`` or None is the tuple of its items (:func:`sequence_as_tuple`, its
    warning ``stacklevel`` frames up from the caller); a 0-d bool mask is a 1-d one over a
    new leading axis of x (a view: a write through it reaches x); a 0-d integer tensor is
    an int (:func:`zero_d_int`)."""
    if type(key) is list:
        return x, (tuple(key) if sequence_as_tuple(key, stacklevel + 1) else key)
    if _is_byte(key) and not key._data.shape:  # a 0-d uint8 key: a 0-d mask, as PyTorch
        key = byte_mask(key)
    if zero_d_mask(key):
        return x.unsqueeze(0), key.reshape(1)
    return x, zero_d_int(key)


def expand_key(op: str, x: Tensor, key) -> list:
    """The key as a list with ``...`` expanded and masks split into index tensors."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for item in key:
        item = zero_d_int(item)
        if isinstance(item, (tuple, builtins.range)):  # a list, as NumPy and torch take them
            item = list(item)
        elif _is_byte(item):
            item = byte_mask(item)
        if is_advanced(item):
            if not on_device(item, x):  # host data: _advanced range-checks it, then uploads
                host = item.numpy() if isinstance(item, Tensor) else np.asarray(item)
                if host.dtype.kind != "b":
                    items.append(("index", host))
                    continue
            item = as_index(op, item, x._device)
            if item._dtype is dtypes.bool_ and not item.ndim:
                raise IndexError(f"{op}: a 0-d bool (or uint8) tensor inside a tuple key is "
                                 "not supported; index with it alone (x[flag]) or use None")
            if item._dtype is dtypes.bool_:
                items.append(("mask", item))
                continue
            items.append(("index", item))
        elif item is None or item is Ellipsis or isinstance(item, builtins.slice):
            items.append((item if item is not None else "none", item))
        elif isinstance(item, bool):
            raise IndexError(f"{op}: a bare bool index is not supported; use None to add an "
                             "axis or a bool tensor mask")
        elif isinstance(item, numbers.Integral):
            items.append(("int", int(item)))
        else:
            raise IndexError(f"{op}: only ints, slices, ..., None, int/bool tensors, lists "
                             f"and NumPy arrays are valid indices; got {type(item).__name__} "
                             f"{item!r}" + (" (a float: use an int)" if isinstance(
                                 item, numbers.Real) else ""))
    used = builtins.sum(item.ndim if kind == "mask" else 1 for kind, item in items
                        if kind not in ("none", Ellipsis))
    ellipses = [i for i, (kind, _) in enumerate(items) if kind is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError(f"{op}: an index can have only one ellipsis (...)")
    if used > x.ndim:
        raise IndexError(f"{op}: too many indices for a tensor of {x.ndim} dims: {key!r}")
    fill = [(builtins.slice(None), builtins.slice(None))] * (x.ndim - used)
    if ellipses:
        at = ellipses[0]
        items = items[:at] + fill + items[at + 1:]
    else:
        items = items + fill
    out, dim = [], 0
    for kind, item in items:
        if isinstance(kind, builtins.slice):
            out.append(("slice", item))
        elif kind == "mask":
            shape = x.shape[dim:dim + item.ndim]
            if item.shape != shape:
                raise IndexError(f"{op}: the mask of shape {item.shape} does not match the "
                                 f"indexed dims {shape} (at dim {dim}) of a tensor of shape "
                                 f"{x.shape}; a mask covers the dims it indexes exactly")
            host = np.nonzero(item.numpy())  # as PyTorch: the result's shape needs the count
            for part in host:
                out.append(("index", as_index(op, part, x._device)))
            dim += item.ndim
            continue
        else:
            out.append((kind, item))
        if kind != "none":
            dim += 1
    return out
