"""Walking a module tree, as PyTorch's ``nn.Module`` does: dotted paths to sub-modules,
parameters and buffers, generators over them, and the settings applied to the whole tree.

Orders are PyTorch's: a module before its sub-modules, depth first in the order they were
assigned; a module's own parameters (or buffers) before those of its sub-modules. A
sub-module, parameter or buffer reachable twice (shared, tied weights) is yielded once,
under its first name, unless ``remove_duplicate=False``.
"""

from __future__ import annotations

from fastnn.api.args import flag
from fastnn.ops.storage import rebind


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class ModuleTree:
    """The traversal half of :class:`~fastnn.nn.Module` (a mixin)."""

    # ------------------------------------------------------------ dotted paths
    def get_submodule(self, target: str) -> ModuleTree:
        """The sub-module at the dotted path ``target`` (``""``: this module)."""
        mod = self
        for part in target.split(".") if target else ():
            child = mod._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(mod).__name__} has no sub-module {part!r} (looking "
                                     f"up {target!r}); it has {list(mod._modules)}")
            mod = child
        return mod

    def _owner_of(self, target: str):
        """(the module holding the last name of ``target``, that name)."""
        path, _, name = target.rpartition(".")
        return self.get_submodule(path), name

    def _member(self, target: str, kind: str):
        """The parameter or buffer (``kind``) at the dotted path ``target``."""
        owner, name = self._owner_of(target)
        table = getattr(owner, f"_{kind}s")
        if name not in table:
            raise AttributeError(f"{type(owner).__name__} has no {kind} {name!r} (looking up "
                                 f"{target!r}); it has {list(table)}")
        return table[name]

    def get_parameter(self, target: str):
        """The parameter at the dotted path ``target`` (``"0.weight"``), as PyTorch's."""
        return self._member(target, "parameter")

    def get_buffer(self, target: str):
        """The buffer at the dotted path ``target`` (``"bn.running_mean"``)."""
        return self._member(target, "buffer")

    def set_submodule(self, target: str, module: ModuleTree, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target``, replacing what is there (with
        ``strict=True`` the last name must already be a sub-module), as PyTorch's."""
        if not target:
            raise ValueError("set_submodule: cannot set the module itself (target is '')")
        if not isinstance(module, ModuleTree):  # (a Module: the class built on this one)
            raise TypeError(f"set_submodule: {module!r} is not a Module")
        owner, name = self._owner_of(target)
        if strict and name not in owner._modules:
            raise AttributeError(f"{type(owner).__name__} has no sub-module {name!r} (setting "
                                 f"{target!r} with strict=True)")
        setattr(owner, name, module)

    # ------------------------------------------------------------ sub-modules
    def named_children(self):
        """(name, module) of each direct sub-module, each once."""
        seen = set()
        for name, mod in self._modules.items():
            if mod is not None and id(mod) not in seen:
                seen.add(id(mod))
                yield name, mod

    def children(self):
        """The direct sub-modules, each once."""
        for _, mod in self.named_children():
            yield mod

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) of this module (named ``prefix``) and every sub-module,
        depth first. ``memo``: a set of ids of modules to leave out (PyTorch's argument)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, mod in self._modules.items():
            if mod is not None:
                yield from mod.named_modules(memo, _join(prefix, name), remove_duplicate)

    def modules(self):
        """This module and every sub-module, each once, depth first."""
        for _, mod in self.named_modules():
            yield mod

    # ------------------------------------------------------------ parameters and buffers
    def _named_members(self, members, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        mods = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                if recurse else [(prefix, self)])
        for mod_prefix, mod in mods:
            for name, value in members(mod):
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield _join(mod_prefix, name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """(dotted name, Parameter) pairs: this module's own first, then its sub-modules'
        (``recurse=False``: its own only); a shared parameter once, under its first name."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Every parameter of this module and its sub-modules, each once (a generator, as
        PyTorch's: ``list(model.parameters())`` for a list)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        """(dotted name, Tensor) of every buffer that is not None, persistent or not."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Every buffer that is not None (running statistics and the like), each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------ settings of the tree
    def train(self, mode: bool = True):
        """Set training mode (``mode=False``: evaluation) on this module and, through their
        own ``train``, its sub-modules; returns self."""
        mode = flag(f"{type(self).__name__}.train", "mode", mode)
        object.__setattr__(self, "training", bool(mode))
        for mod in self.children():
            mod.train(mode)
        return self

    def eval(self):
        """Evaluation mode (Dropout passes its input through, BatchNorm uses its running
        statistics): ``train(False)``; returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Freeze (False) or unfreeze every parameter; returns self, as PyTorch's."""
        requires_grad = flag(f"{type(self).__name__}.requires_grad_", "requires_grad",
                             requires_grad)
        for p in self.parameters():
            p.requires_grad = bool(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's ``.grad`` (PyTorch's default), or with
        ``set_to_none=False`` fill the existing gradients with zeros."""
        for p in self.parameters():
            grad = p.grad
            if set_to_none or grad is None:
                p.grad = None
            else:
                rebind(grad, grad._device.ops.full(grad.shape, 0, grad._dtype.name,
                                                   grad._device.index))
