"""A module's ``load_state_dict`` hooks, as PyTorch's.

``load_state_dict(state)`` with hooks registered runs, in PyTorch's order::

    pre-hooks:   hook(module, state, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs) on a shallow copy of ``state``, for each
                 module depth first (a module before its sub-modules), ``prefix`` its
                 dotted path with a trailing dot ("" for the root): the hooks edit the
                 copy (gpt-fast's attention merges wq/wk/wv into wqkv), then it loads
    post-hooks:  hook(module, incompatible_keys) after loading, before ``strict`` judges
                 the missing and unexpected keys: a hook may remove keys from the lists

``_register_load_state_dict_pre_hook(hook, with_module=False)`` is PyTorch's older form,
whose hook takes no module (unless ``with_module``). What the pre-hooks append to
``missing_keys`` or ``unexpected_keys`` is reported too, and anything they append to
``error_msgs`` raises once they have all run. The hooks of all modules see one copy of the
state (PyTorch gives a sub-module the entries under its prefix), which is the same for
hooks that edit the entries under their own prefix.
"""

from __future__ import annotations

import functools

from fastnn.nn.hooks import RemovableHandle, _register


def _table(module, name: str) -> dict:
    """``module``'s hook dict ``name``, made on first use (modules pickled before these
    hooks existed have none)."""
    table = module.__dict__.get(name)
    if table is None:
        table = {}
        object.__setattr__(module, name, table)
    return table


class StateHooksMixin:
    """The ``register_load_state_dict_*_hook`` methods of :class:`~fastnn.nn.Module`."""

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads; it may edit ``state_dict``
        (see :mod:`fastnn.nn.state_hooks`)."""
        owner = f"{type(self).__name__}.register_load_state_dict_pre_hook"
        if not callable(hook):
            raise TypeError(f"{owner}: hook must be callable, got {type(hook).__name__}")
        return _register(_table(self, "_load_state_dict_pre_hooks"),
                         functools.partial(hook, self), False, owner)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """PyTorch's older form: ``hook(state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)``, with the module first when
        ``with_module``."""
        owner = f"{type(self).__name__}._register_load_state_dict_pre_hook"
        if not callable(hook):
            raise TypeError(f"{owner}: hook must be callable, got {type(hook).__name__}")
        call = functools.partial(hook, self) if with_module else hook
        return _register(_table(self, "_load_state_dict_pre_hooks"), call, False, owner)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` after loading, before ``strict`` judges
        ``incompatible_keys.missing_keys`` and ``.unexpected_keys`` (lists it may edit)."""
        owner = f"{type(self).__name__}.register_load_state_dict_post_hook"
        return _register(_table(self, "_load_state_dict_post_hooks"), hook, False, owner)


def _hooked(root, name: str) -> list:
    """(prefix, module) of every module of ``root`` with hooks in ``name``, in PyTorch's
    load order (shared modules under each of their names)."""
    found = []
    for path, module in root.named_modules(remove_duplicate=False):
        if module.__dict__.get(name):
            found.append((f"{path}." if path else "", module))
    return found


def run_pre_hooks(root, state_dict, strict: bool):
    """(the state to load, missing keys, unexpected keys) after ``root``'s pre-hooks: the
    state itself when no module has one, else the copy they edited."""
    hooked = _hooked(root, "_load_state_dict_pre_hooks")
    if not hooked:
        return state_dict, [], []
    state_dict = dict(state_dict)  # PyTorch's shallow copy: the caller's dict stays
    missing, unexpected, errors = [], [], []
    for prefix, module in hooked:
        for hook in list(module._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, {}, strict, missing, unexpected, errors)
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(root).__name__}:\n\t"
                           + "\n\t".join(errors))
    return state_dict, missing, unexpected


def has_post_hooks(root) -> bool:
    return bool(_hooked(root, "_load_state_dict_post_hooks"))


def _children_first(module):
    for child in module._modules.values():
        if child is not None:
            yield from _children_first(child)
    yield module


def run_post_hooks(root, incompatible) -> None:
    """Each post-hook of ``root``'s modules on ``incompatible``, a module's after its
    sub-modules', as PyTorch's."""
    for module in _children_first(root):
        for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
            hook(module, incompatible)
