"""ParameterList and ParameterDict: containers that register parameters, as PyTorch's.

Entries are parameters of the container itself (named ``"0"``, ``"1"``, ... or by key),
so an owning module's ``named_parameters()``, ``state_dict()`` and optimizers see them as
``"<attr>.0"``. A plain Tensor put in becomes a trainable Parameter sharing its storage,
as in PyTorch.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.nn.parameter import Parameter
from fastnn.ops.tensor import Tensor


def _as_parameter(owner: str, key, value) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        if not value.dtype.is_floating:
            raise TypeError(f"{owner}: entry {key!r} is a {value.dtype.name} tensor; "
                            f"parameters are floating point (convert with .float())")
        return Parameter(value.detach())
    raise TypeError(f"{owner}: entry {key!r} is a {type(value).__name__}, not a Tensor or "
                    f"an fnn.nn.Parameter")


class ParameterList(Module):
    """A list of parameters, indexed like a Python list; names ``"0"``, ``"1"``, ..."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def _items(self) -> list:
        return list(self._parameters.values())

    def _reset(self, items: list) -> None:
        for key in list(self._parameters):
            delattr(self, key)
        for i, p in enumerate(items):
            setattr(self, str(i), p)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._items())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList(self._items()[index])
        return self._items()[index]

    def __setitem__(self, index: int, value) -> None:
        items = self._items()
        items[index] = _as_parameter("ParameterList", index, value)
        self._reset(items)

    def __iadd__(self, values) -> ParameterList:
        return self.extend(values)

    def append(self, value) -> ParameterList:
        setattr(self, str(len(self)), _as_parameter("ParameterList", len(self), value))
        return self

    def extend(self, values) -> ParameterList:
        if isinstance(values, Tensor):
            raise TypeError("ParameterList.extend: expected an iterable of tensors, got one "
                            "Tensor; use append")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_entry(i, p) for i, p in enumerate(self._items()))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward: index it in the owning "
                                  "module's forward")


class ParameterDict(Module):
    """An ordered dict of parameters keyed by name (parameters ``"<key>"``)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(list(self._parameters))

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def __getitem__(self, key) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key, value) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ParameterDict: keys must be non-empty strings without '.', "
                           f"got {key!r}")
        setattr(self, key, _as_parameter("ParameterDict", key, value))

    def __delitem__(self, key) -> None:
        if key not in self._parameters:
            raise KeyError(key)
        delattr(self, key)

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def pop(self, key) -> Parameter:
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters) -> None:
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_entry(k, p, p.type()) for k, p in self._parameters.items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict has no forward: read its parameters by key")


def _entry(key, p, kind_name=None) -> str:
    """One entry as PyTorch prints it: ``  (0): Parameter containing: [fastnn.float32 of
    size 3x4]`` (a plain tensor: ``Tensor``; off the cpu the device index follows; a
    ParameterDict names the type, ``fastnn.FloatTensor``, where a list names the dtype)."""
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    size = "x".join(str(n) for n in p.shape)
    where = "" if p.device.type == "cpu" else f" ({p.device.type}:{p.device.index})"
    return f"  ({key}): {kind} containing: [{kind_name or p.dtype} of size {size}{where}]"
