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
from collections.abc import Iterable

import fastnn
from fastnn.nn.utils.convert_parameters import parameters_to_vector
from fastnn.nn.utils.pruning_method import BasePruningMethod, PruningContainer

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


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


class _Structured(BasePruningMethod):
    """Prunes ``amount`` channels (an int, or that fraction) along ``dim``: all but those
    that :meth:`_kept` keeps."""

    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count_to_prune(self.amount, channels)
        if not count:
            return default_mask
        kept = self._kept(t, channels, count)
        return _channel_mask(t, self.dim, kept) * default_mask.to(dtype=t.dtype)


class RandomStructured(_Structured):
    """Prunes ``amount`` channels (an int, or that fraction) along ``dim``, at random."""

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def _kept(self, t, channels, count):
        scores = fastnn.rand(channels)
        return scores > fastnn.kthvalue(scores, k=count).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels (an int, or that fraction) along ``dim`` of smallest
    ``n``-norm (``n`` as ``fnn.norm``'s ``p``: an int, float, inf, -inf or "fro")."""

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def _kept(self, t, channels, count):
        dim = self.dim % t.ndim
        norms = fastnn.norm(t, p=self.n, dim=[d for d in range(t.ndim) if d != dim])
        return fastnn.topk(norms, k=channels - count, largest=True).indices

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
