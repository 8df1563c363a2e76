"""PyTorch's ``torch.nn.utils.parametrizations``: ``weight_norm`` as a parametrization.

``weight_norm(module)`` registers :class:`_WeightNorm` on ``module.weight``: the
originals are ``parametrizations.weight.original0`` (g, the norms over every dim but
``dim``) and ``original1`` (v), PyTorch's state_dict keys, and ``module.weight`` is
``g * v / ||v||`` on every read.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.nn.utils import parametrize
from fastnn.nn.utils.weight_norm import norm_except_dim, weight_norm_of


class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||, the norm over every dim but ``dim`` (None: all dims)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_of(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim=0) -> Module:
    """Weight normalisation of ``module.<name>`` as a parametrization (see the module)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


__all__ = ["weight_norm"]
