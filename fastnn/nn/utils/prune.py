"""Pruning, as PyTorch's ``torch.nn.utils.prune``: zero a parameter's entries through a mask.

Pruning parameter ``name`` of a module moves it to ``name + "_orig"`` (still the
parameter the optimizer trains), adds the buffer ``name + "_mask"`` (1 keeps, 0
prunes), and makes ``module.name`` the plain tensor ``mask * orig``, recomputed before
every forward by a forward pre-hook (the pruning method itself). So the state_dict holds
``weight_orig`` and ``weight_mask``, the gradient of a pruned entry is 0, and
:func:`remove` makes the pruning permanent (``name`` a parameter again, holding the
masked values).

Pruning the same parameter again combines the methods in a :class:`PruningContainer`:
an unstructured method prunes among the entries still unpruned, a structured one among
the channels that still hold one. The random methods draw from fastnn's generator, so
they pick other entries than PyTorch's would from the same seed.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import fastnn
from fastnn.nn.utils.convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


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


class Identity(BasePruningMethod):
    """Prunes nothing: a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` entries (an int) or that fraction of them, those that
    :meth:`_dropped` picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        count = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            mask.view(-1)[self._dropped(t.reshape(-1), count)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries (an int) or that fraction of them, at random."""

    @staticmethod
    def _dropped(flat, count):
        return fastnn.topk(fastnn.rand_like(flat), k=count).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries (an int, or that fraction) of smallest absolute value."""

    @staticmethod
    def _dropped(flat, count):
        return fastnn.topk(flat.abs(), k=count, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels (an int, or that fraction) along ``dim``, at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if not count:
            return default_mask
        scores = fastnn.rand(channels)
        threshold = fastnn.kthvalue(scores, k=count).values
        return _channel_mask(t, self.dim, scores > threshold) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels (an int, or that fraction) along ``dim`` of smallest
    ``n``-norm (``n`` as ``fnn.norm``'s ``p``: an int, float, inf, -inf or "fro")."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if not count:
            return default_mask
        dim = self.dim % t.ndim
        norms = fastnn.norm(t, p=self.n, dim=[d for d in range(t.ndim) if d != dim])
        keep = fastnn.topk(norms, k=channels - count, largest=True).indices
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"CustomFromMask: the mask has shape {tuple(self.mask.shape)}, "
                             f"the parameter {tuple(default_mask.shape)}; give one of the "
                             f"parameter's shape")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Prune nothing of ``module.name`` (but reparametrize it as pruning does)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (an int, or a fraction) of ``module.name``'s entries at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` (an int, or a fraction) entries of ``module.name`` of smallest
    absolute value (of ``importance_scores`` when given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` (an int, or a fraction) channels of ``module.name`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.name`` along ``dim`` of smallest n-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together, as one vector: with
    ``pruning_method=L1Unstructured, amount=0.2`` the 20% smallest entries over them all.
    Each gets a :class:`CustomFromMask` of its part of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([
        importance_scores.get((module, name), getattr(module, name)).detach()
        for module, name in parameters])
    default_mask = parameters_to_vector([
        getattr(module, name + "_mask", fastnn.ones_like(getattr(module, name))).detach()
        for module, name in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'global_unstructured(): only "unstructured" pruning methods are '
                        f"supported, found {pruning_method.__name__} of type "
                        f"{method.PRUNING_TYPE!r}")
    container = PruningContainer()
    container._tensor_name = method._tensor_name = "temp"
    container.add_pruning_method(method)
    with fastnn.no_grad():
        final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        stop = start + param.numel()
        custom_from_mask(module, name, mask=final_mask[start:stop].view_as(param))
        start = stop


def custom_from_mask(module, name, mask):
    """Prune ``module.name`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.name`` permanent (see :meth:`BasePruningMethod.remove`)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter {name!r} of module {type(module).__name__} has to be pruned "
                     f"before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or one of its submodules has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _check_amount(amount) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount!r}. Must be int or float.")
    if (amount < 0 if isinstance(amount, numbers.Integral) else not 0.0 <= amount <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _count_to_prune(amount, size: int) -> int:
    """How many of ``size`` entries (or channels) ``amount`` prunes; PyTorch rounds a
    fraction half to even, as Python's ``round``."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of "
                             f"parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _check_structured(t, dim) -> None:
    if t.ndim <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {tuple(t.shape)} with {t.ndim} dims")
    if dim >= t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _channel_mask(t, dim, channels):
    """Ones at the ``channels`` (a bool mask or indices) along ``dim``, zeros elsewhere."""
    mask = fastnn.zeros_like(t)
    mask[tuple(channels if d == dim % t.ndim else slice(None) for d in range(t.ndim))] = 1
    return mask
