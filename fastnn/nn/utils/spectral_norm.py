"""PyTorch's hook-based ``torch.nn.utils.spectral_norm``: a weight divided by an estimate of
its largest singular value.

The weight, as a matrix W (``dim`` first, the rest flattened), is kept as
``weight_orig``; buffers ``weight_u`` and ``weight_v`` hold estimates of its first
left and right singular vectors. Before each forward, in training mode only,
``n_power_iterations`` steps of power iteration update them in place:

    v = normalize(W^T u, eps),  u = normalize(W v, eps)

and then ``weight = weight_orig / sigma`` with ``sigma = u . (W v)`` (u and v held
constant, so the gradient reaches ``weight_orig`` through W and sigma). In eval mode
u and v are used as they are.
"""

from __future__ import annotations

from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d
from fastnn.nn.module import Module
from fastnn.nn.parameter import Parameter
from fastnn.nn.utils.weight_norm import remove_reparametrization
from fastnn.ops.distance import normalize
from fastnn.ops.tensor import Tensor, randn


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma``."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = (
            name, n_power_iterations, dim, eps)

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(matrix.T @ u, dim=0, eps=self.eps))
                    u.copy_(normalize(matrix @ v, dim=0, eps=self.eps))
                # later iterations write u and v in place: use copies for sigma
                u, v = u.clone(), v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        kind = getattr(module, self.name + "_orig").param_class
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach(), kind))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim=None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (see the
    module). ``dim`` (the output-channel dim): 1 for transposed convolutions, else 0."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                               f"{name}")
    if module._parameters.get(name) is None:
        raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter {name!r}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    with no_grad():
        rows, cols = fn.reshape_weight_to_matrix(weight).shape
        u = normalize(randn(rows, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        v = normalize(randn(cols, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())  # a plain Tensor until the first forward
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``name`` is one parameter again, holding the weight
    divided by the current sigma."""
    return remove_reparametrization(module, SpectralNorm, name, "spectral_norm")
