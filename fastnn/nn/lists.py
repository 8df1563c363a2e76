"""ModuleList and ModuleDict: containers that register their modules, as PyTorch's.

They hold sub-modules (parameters named ``"0.weight"``, ``"encoder.weight"``) but define
no forward of their own: the owning module decides how to call them.
"""

from __future__ import annotations

import itertools

from fastnn.nn.module import Module


def _check_module(owner: str, key, value) -> Module:
    if not isinstance(value, Module):
        raise TypeError(f"{owner}: entry {key!r} is a {type(value).__name__}, not a fastnn Module")
    return value


class ModuleList(Module):
    """A list of modules, indexed like a Python list; keys ``"0"``, ``"1"``, ..."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _items(self) -> list:
        return list(self._modules.values())

    def _reset(self, items: list) -> None:
        for key in list(self._modules):
            delattr(self, key)
            self._modules.pop(key, None)
        for i, mod in enumerate(items):
            setattr(self, str(i), mod)

    def __len__(self) -> int:
        return len(self._modules)

    def __repr__(self) -> str:
        """PyTorch's: a run of modules that print alike is one entry, ``(0-11): 12 x Block(``
        (nanoGPT's ``h`` of identical blocks)."""
        if not self._modules:
            return f"{type(self).__name__}()"
        lines, start = [], 0
        for text, run in itertools.groupby(repr(mod) for mod in self._items()):
            n = len(list(run))
            key = f"({start}-{start + n - 1}): {n} x " if n > 1 else f"({start}): "
            lines.append((key + text).replace("\n", "\n  "))
            start += n
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def __iter__(self):
        return iter(self._items())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(self._items()[index])
        return self._items()[index]

    def __setitem__(self, index, module) -> None:
        items = self._items()
        items[index] = _check_module("ModuleList", index, module)
        self._reset(items)

    def __delitem__(self, index) -> None:
        items = self._items()
        del items[index]
        self._reset(items)

    def append(self, module) -> ModuleList:
        setattr(self, str(len(self)), _check_module("ModuleList", len(self), module))
        return self

    def extend(self, modules) -> ModuleList:
        for mod in modules:
            self.append(mod)
        return self

    def insert(self, index: int, module) -> None:
        items = self._items()
        items.insert(index, _check_module("ModuleList", index, module))
        self._reset(items)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward: iterate over it and call each "
                                  "module, or use Sequential")


class ModuleDict(Module):
    """An ordered dict of modules keyed by name (parameters ``"<key>.<name>"``)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def __contains__(self, key) -> bool:
        return key in self._modules

    def __getitem__(self, key) -> Module:
        return self._modules[key]

    def __setitem__(self, key, module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ModuleDict: keys must be non-empty strings without '.', got {key!r}")
        setattr(self, key, _check_module("ModuleDict", key, module))

    def __delitem__(self, key) -> None:
        del self._modules[key]  # (its attribute goes with it: fastnn.nn.members)

    def pop(self, key) -> Module:
        mod = self[key]
        del self[key]
        return mod

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, mod in pairs:
            self[key] = mod

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward: call its modules by key")
