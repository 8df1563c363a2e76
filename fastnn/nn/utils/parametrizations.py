"""PyTorch's ``torch.nn.utils.parametrizations``: ``weight_norm`` and ``orthogonal``.

``weight_norm(module)`` registers :class:`_WeightNorm` on ``module.weight``: the
originals are ``parametrizations.weight.original0`` (g, the norms over every dim but
``dim``) and ``original1`` (v), PyTorch's state_dict keys, and ``module.weight`` is
``g * v / ||v||`` on every read.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.nn.utils import parametrize
from fastnn.nn.utils.orthogonal import MAPS, _Orthogonal
from fastnn.nn.utils.weight_norm import norm_except_dim, weight_norm_of
from fastnn.ops.tensor import Tensor


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




def orthogonal(module: Module, name: str = "weight", orthogonal_map=None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` (a matrix or a batch of them) orthogonal, as PyTorch's (see
    :mod:`fastnn.nn.utils.orthogonal`); ``orthogonal_map`` defaults to "matrix_exp" for a
    square weight, "householder" otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization),
        unsafe=True)
    return module


__all__ = ["orthogonal", "weight_norm"]
