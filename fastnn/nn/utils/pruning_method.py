"""The protocol of a pruning method (:class:`BasePruningMethod`: its mask, its hook, its
``apply``/``remove``) and :class:`PruningContainer`, which joins the methods that pruned one
parameter one after another. The methods themselves and the functions that apply them are in
:mod:`fastnn.nn.utils.prune`."""

from __future__ import annotations

from abc import ABC, abstractmethod

import fastnn

__all__ = ["BasePruningMethod", "PruningContainer"]


class BasePruningMethod(ABC):
    """A way to choose the mask of one parameter: subclasses define ``compute_mask(t,
    default_mask)`` (the new mask from the importance scores ``t`` and the mask so far) and
    ``PRUNING_TYPE`` ("unstructured", "structured" with a ``dim``, or "global"). An
    instance is also the forward pre-hook that recomputes ``module.name``."""

    _tensor_name: str | None = None

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` (same shape), given the mask ``default_mask`` so far."""

    def apply_mask(self, module):
        """``name + "_mask"`` times ``name + "_orig"`` of ``module``: the pruned tensor."""
        if self._tensor_name is None:
            raise RuntimeError(f"{type(self).__name__}: module {type(module).__name__} has to "
                               f"be pruned first (apply sets the tensor's name)")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.name`` with a new ``cls(*args, **kwargs)`` (joined with the
        methods that pruned it before, in a :class:`PruningContainer`); returns the method
        that now is the module's hook."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(f"prune: importance_scores must have the shape of parameter "
                             f"{name!r} of {type(module).__name__}, got "
                             f"{tuple(importance_scores.shape)} vs {tuple(orig.shape)}")
        first = not isinstance(method, PruningContainer)
        if first:
            if name not in module._parameters:
                names = sorted(n for n, p in module._parameters.items() if p is not None)
                raise ValueError(f"prune: {type(module).__name__} has no parameter named "
                                 f"{name!r}; prune one of {names}")
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = fastnn.ones_like(orig).detach()
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with fastnn.no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (computed from ``importance_scores``, default ``t``), without
        touching any module."""
        if importance_scores is None:
            importance_scores = t
        elif tuple(importance_scores.shape) != tuple(t.shape):
            raise ValueError(f"prune: importance_scores must have the shape of t, got "
                             f"{tuple(importance_scores.shape)} vs {tuple(t.shape)}")
        default_mask = fastnn.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``module.name`` becomes a parameter again (the
        ``_orig`` parameter object, holding the masked values); ``_orig`` and ``_mask`` go."""
        if self._tensor_name is None:
            raise RuntimeError(f"{type(self).__name__}: module {type(module).__name__} has to "
                               f"be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """The new method, joined with the pruning hook already on ``module.name`` (whose hook
    entry is taken off: the returned method is registered in its place)."""
    found = [(k, hook) for k, hook in module._forward_pre_hooks.items()
             if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(found) > 1:
        raise RuntimeError(f"prune: several pruning hooks on {name!r} of "
                           f"{type(module).__name__}; join them in one PruningContainer")
    for k, _ in found:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not found:
        return method
    old = found[0][1]
    if not isinstance(old, PruningContainer):
        old = PruningContainer(old)
    old.add_pruning_method(method)
    return old


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after another to one parameter; its mask is the
    last method's, computed over what the earlier ones left."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Append ``method`` (one pruning the same parameter)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"PruningContainer: {type(method).__name__} is not a "
                            f"BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"PruningContainer: can only add pruning methods acting on the "
                             f"parameter named {self._tensor_name!r}, found "
                             f"{method._tensor_name!r}")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask over the part of ``t`` still unpruned: the entries where
        ``default_mask`` is 1 (unstructured), the channels along ``dim`` that hold a 1
        (structured), or all of it (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            where = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('PruningContainer: pruning methods of PRUNING_TYPE '
                                     '"structured" need the attribute `dim`')
            dim = method.dim + t.ndim if method.dim < 0 else method.dim
            if not 0 <= dim < t.ndim:
                raise IndexError(f"PruningContainer: dim {method.dim} is out of range for a "
                                 f"tensor of {t.ndim} dimensions")
            keep = default_mask.sum(dim=[d for d in range(t.ndim) if d != dim]) != 0
            where = tuple(keep if d == dim else slice(None) for d in range(t.ndim))
        elif kind == "global":
            where = tuple(slice(None) for _ in range(t.ndim))
        else:
            raise ValueError(f"PruningContainer: unknown PRUNING_TYPE {kind!r}; expected "
                             f"'unstructured', 'structured' or 'global'")
        partial = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = partial.to(dtype=new_mask.dtype)
        return new_mask
