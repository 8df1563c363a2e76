"""The dicts behind a module's ``_parameters``, ``_buffers`` and ``_modules``.

fastnn keeps each parameter, buffer and sub-module in the instance ``__dict__`` as well,
so that ``self.weight`` in a forward is a plain attribute read (PyTorch's goes through
``__getattr__``). Code written for PyTorch also writes these dicts directly: a classifier
swapped with ``model._modules["fc"] = nn.Linear(...)``, pruning's ``del
module._parameters["weight"]``, a functional call that puts other tensors in
``_parameters``. A :class:`Members` dict keeps the attribute of each name in step with
such writes, so ``module.fc`` and the forward see what the dict holds, as in PyTorch.
"""

from __future__ import annotations

_NONE = object()


class Members(dict):
    """A dict that mirrors each write into ``owner`` (the module's instance ``__dict__``)."""

    __slots__ = ("_owner",)

    def __init__(self, owner: dict, items=()):
        super().__init__(items)
        self._owner = owner

    def __setitem__(self, name, value) -> None:
        super().__setitem__(name, value)
        self._owner[name] = value

    def __delitem__(self, name) -> None:
        super().__delitem__(name)
        self._owner.pop(name, None)

    def pop(self, name, default=_NONE):
        if name in self:
            self._owner.pop(name, None)
            return super().pop(name)
        if default is _NONE:
            raise KeyError(name)
        return default

    def popitem(self):
        name, value = super().popitem()
        self._owner.pop(name, None)
        return name, value

    def setdefault(self, name, default=None):
        if name not in self:
            self[name] = default
        return self[name]

    def update(self, *args, **kwargs) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def clear(self) -> None:
        for name in list(self):
            del self[name]

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce_ex__(self, protocol):
        # a copy or a pickle holds a plain dict; Module.__setstate__ binds it again
        return dict, (dict(self),)


def bind_members(module_dict: dict) -> None:
    """Make the ``_parameters``, ``_buffers`` and ``_modules`` of the module whose instance
    dict is ``module_dict`` :class:`Members` of it (after a copy or an unpickle)."""
    for name in ("_parameters", "_buffers", "_modules"):
        members = module_dict.get(name)
        if isinstance(members, dict) and not (isinstance(members, Members)
                                              and members._owner is module_dict):
            module_dict[name] = Members(module_dict, members)
