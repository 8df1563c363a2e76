"""PyTorch's ``torch.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and
``orthogonal``.

``weight_norm(module)`` registers :class:`_WeightNorm` on ``module.weight``: the
originals are ``parametrizations.weight.original0`` (g, the norms over every dim but
``dim``) and ``original1`` (v), PyTorch's state_dict keys, and ``module.weight`` is
``g * v / ||v||`` on every read.

``spectral_norm(module)`` registers :class:`_SpectralNorm`: ``module.weight`` is the
original divided by sigma, an estimate of its largest singular value (the weight as a
matrix, ``dim`` first), kept by power iteration in the buffers
``parametrizations.weight.0._u`` and ``_v`` (PyTorch's keys): 15 steps at registration,
then ``n_power_iterations`` at each read in training mode (u from v, then v from u,
written in place without gradient); ``sigma = u . (W v)`` carries the gradient.
"""

from __future__ import annotations

from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from fastnn.nn.module import Module
from fastnn.nn.utils import parametrize
from fastnn.nn.utils.orthogonal import MAPS, _Orthogonal
from fastnn.nn.utils.weight_norm import norm_except_dim, weight_norm_of
from fastnn.ops.distance import normalize
from fastnn.ops.tensor import Tensor, randn


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




class _SpectralNorm(Module):
    """weight -> weight / sigma (see the module); a 1-d weight is only normalised."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._matrix(weight)
            h, w = matrix.shape
            kind = dict(dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", normalize(randn(h, **kind), dim=0, eps=eps))
            self.register_buffer("_v", normalize(randn(w, **kind), dim=0, eps=eps))
            self._power_method(matrix, 15)

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.flatten(1)

    def _power_method(self, matrix: Tensor, steps: int) -> None:
        with no_grad():
            matrix = matrix.detach()
            for _ in range(steps):  # in place: the buffers keep their identity
                self._u.copy_(normalize(matrix @ self._v, dim=0, eps=self.eps))
                self._v.copy_(normalize(matrix.T @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = self._matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim=None) -> Module:
    """Spectral normalisation of ``module.<name>`` as a parametrization (see the module);
    ``dim`` defaults to 1 for a transposed convolution's weight, else 0, as PyTorch's."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
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
