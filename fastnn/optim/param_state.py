"""``optimizer.state``: each parameter's state, as fastnn's update rules keep it and as
PyTorch's users read it.

The rules keep ``id(param) -> {name: backend array or number}`` (a parameter is not a
dict key they hash by value, and the arrays are what the backend's fused updates take).
Indexed by the parameter itself, as PyTorch's ``optimizer.state[p]``, the same state
comes back as a mapping of tensors on the state's device (empty for a parameter not
updated yet, as PyTorch's defaultdict), which writes through: ``optimizer.state[p]
["exp_avg"].norm()`` reads Adam's moment, ``optimizer.state[p]["exp_avg"] = t`` sets it.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np

from fastnn.api import dtypes
from fastnn.ops.tensor import Tensor, tensor

#: the counts and factors fastnn's rules keep as numbers that PyTorch's optimizers keep as
#: 0-d float32 tensors (``state[p]["step"].item()`` works as in PyTorch)
TENSOR_NUMBERS = ("step", "mu_product", "eta", "mu")


def is_array(value) -> bool:
    """Whether a state entry is a backend array (else a number)."""
    return hasattr(value, "shape") and not isinstance(value, (int, float))


class ParamState(dict):
    """id(param) -> that parameter's state (the rules' view, through dict's own methods:
    ``dict.get``, ``setdefault``, ``dict.items(state)``); ``state[param]`` is
    :class:`TensorState`, PyTorch's view of the same entries, and iterating gives PyTorch's
    view too: ``for p in opt.state``, ``opt.state.items()`` and ``.values()`` give the
    parameters and their tensors, as PyTorch's ``optimizer.state`` does."""

    __slots__ = ("_owner",)

    def __init__(self, owner, *args):
        super().__init__(*args)
        self._owner = owner  # the optimizer: its params, and where their state lives

    def __missing__(self, key):  # (a parameter is never a key: the ids' lookups stay C's)
        if isinstance(key, Tensor):
            return TensorState(self, key)
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, id(key) if isinstance(key, Tensor) else key)

    def __iter__(self):
        by_id = {id(p): p for p in self._owner._all_params()}
        return iter([by_id.get(key, key) for key in dict.keys(self)])

    def keys(self) -> list:
        return list(self)

    def values(self) -> list:
        return [self[key] for key in self]

    def items(self) -> list:
        return [(key, self[key]) for key in self]

    def __reduce__(self):  # (pickled as the plain dict it holds; the optimizer re-wraps it)
        return dict, (dict(dict.items(self)),)


class TensorState(MutableMapping):
    """One parameter's state entries as tensors (arrays) and numbers, writing through to
    the optimizer's own table."""

    def __init__(self, table: ParamState, param: Tensor):
        self._table, self._param = table, param

    def _raw(self, create: bool = False) -> dict:
        key = id(self._param)
        found = dict.get(self._table, key)
        if found is None:
            found = {}
            if create:
                dict.__setitem__(self._table, key, found)
        return found

    def _as_tensor_number(self, name) -> bool:
        """Whether entry ``name`` is a count or factor that fastnn's own rule keeps as a
        Python number and PyTorch's optimizers as a 0-d float32 tensor."""
        if name not in TENSOR_NUMBERS:
            return False
        update = type(self._table._owner)._update
        return update.__module__.startswith("fastnn.") and update.__qualname__ != (
            "Optimizer._update")  # (a user's optimizer keeps what it stores)

    def __getitem__(self, name):
        value = self._raw()[name]
        if not is_array(value):
            if isinstance(value, (int, float)) and self._as_tensor_number(name):
                return tensor(float(value), dtype=dtypes.float32, device="cpu")  # (as PyTorch)
            return value
        device = self._table._owner._home(self._param)[0]
        return Tensor._make(value, dtypes.as_dtype(_dtype_name(value)), device)

    def __setitem__(self, name, value) -> None:
        if self._as_tensor_number(name) and np.ndim(value) == 0:
            number = float(value.item() if hasattr(value, "item") else value)
            self._raw(create=True)[name] = int(number) if name == "step" else number
            return
        if isinstance(value, Tensor):
            device, _ = self._table._owner._home(self._param)
            if value._device is not device:  # (the rules find their arrays on one device)
                value = value.to(device)
            value = value._data
        self._raw(create=True)[name] = value

    def __delitem__(self, name) -> None:
        del self._raw()[name]

    def __iter__(self):
        return iter(list(self._raw()))

    def __len__(self) -> int:
        return len(self._raw())

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def _dtype_name(array) -> str:
    kind = array.dtype
    return kind if isinstance(kind, str) else np.dtype(kind).name
