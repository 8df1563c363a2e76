"""Weight normalisation, as PyTorch's: ``w = g * v / ||v||`` with the norm taken over every
dim but ``dim``.

:func:`weight_norm` and :func:`remove_weight_norm` are PyTorch's older, hook-based
``torch.nn.utils.weight_norm`` (parameters ``weight_g`` and ``weight_v``, ``weight``
recomputed before every forward; deprecated there as here, with the same
FutureWarning); the parametrization of :mod:`fastnn.nn.utils.parametrizations` is
the newer form. :func:`norm_except_dim` and :func:`weight_norm_of` are the shared math.
"""

from __future__ import annotations

import warnings

from fastnn.nn.module import Module
from fastnn.nn.parameter import Parameter
from fastnn.ops.tensor import Tensor


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """PyTorch's ``norm_except_dim``: the p-norm of each slice of ``v`` along ``dim``, shaped
    to broadcast against ``v`` (``dim=-1``: the norm of the whole tensor, 0-d)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.reshape(v.shape[0], -1).norm(pow, dim=1).reshape(
            (v.shape[0],) + (1,) * (v.ndim - 1))
    if dim == v.ndim - 1:
        return v.reshape(-1, v.shape[-1]).norm(pow, dim=0).reshape(
            (1,) * (v.ndim - 1) + (v.shape[-1],))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def weight_norm_of(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """PyTorch's ``_weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name: str, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return weight_norm_of(getattr(module, self.name + "_v"),
                              getattr(module, self.name + "_g"), self.dim)

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        kind = getattr(module, self.name + "_v").param_class
        delattr(module, self.name)
        delattr(module, self.name + "_g")
        delattr(module, self.name + "_v")
        setattr(module, self.name, Parameter(weight.detach(), kind))


def weight_norm(module: Module, name: str = "weight", dim=0) -> Module:
    """Replace parameter ``name`` by ``name_g`` (its norms over every dim but ``dim``) and
    ``name_v`` (its direction): ``name = name_g * name_v / ||name_v||``, recomputed before
    each forward. ``dim=None``: one norm for the whole tensor."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    if name not in module._parameters or module._parameters[name] is None:
        raise ValueError(f"weight_norm: {type(module).__name__} has no parameter {name!r}")
    fn = WeightNorm(name, dim)
    weight = module._parameters[name]
    delattr(module, name)
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight.detach(), 2,
                                                                     fn.dim),
                                                     weight.param_class))
    module.register_parameter(name + "_v", Parameter(weight.detach(), weight.param_class))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_reparametrization(module: Module, kind: type, name: str, label: str) -> Module:
    """Take off ``module``'s forward pre-hook of class ``kind`` for parameter ``name``
    (the old hook-based weight_norm and spectral_norm), putting the parameter back."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``name`` is one parameter again, holding g * v / ||v||."""
    return remove_reparametrization(module, WeightNorm, name, "weight_norm")
