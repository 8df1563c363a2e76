"""GroupNorm, InstanceNorm1d/2d/3d and LocalResponseNorm, PyTorch's layers over
:mod:`fastnn.ops.norms`.

GroupNorm has weight (connective, 1) and bias (bias, 0) per channel when ``affine``.
InstanceNorm has them only with ``affine=True`` (PyTorch's default is False), and the
buffers running_mean (0), running_var (1) and num_batches_tracked only with
``track_running_stats=True``: then training updates them and eval mode normalises by
them. ``reverse`` is the tape's; its forward runs in ``keep_buffers()``, so it updates
no buffer.
"""

from __future__ import annotations

from fastnn.api.args import as_given, flag, integer, nonnegative, real
from fastnn.nn.batchnorm import RunningStats
from fastnn.nn.module import Module, buffers_kept, check_tensor, const_init
from fastnn.nn.norm import reset_affine
from fastnn.ops import norms
from fastnn.ops.shaping import squeeze, unsqueeze


class GroupNorm(Module):
    """PyTorch's GroupNorm(num_groups, num_channels, eps, affine, bias=) over (N, C, *)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_groups = integer("GroupNorm", "num_groups", num_groups)
        self.num_channels = integer("GroupNorm", "num_channels", num_channels)
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                             f"num_groups={num_groups}")
        self.eps = as_given(nonnegative("GroupNorm", "eps", eps), eps)
        self.affine = flag("GroupNorm", "affine", affine)
        self._has_bias = self.affine and flag("GroupNorm", "bias", bias)
        shape = (self.num_channels,)
        self.weight = const_init(shape, 1.0, "connective", dtype, device) if affine else None
        self.bias = const_init(shape, 0.0, "bias", dtype, device) if self._has_bias else None

    def reset_parameters(self) -> None:
        """weight back to 1 and bias to 0, in place (PyTorch's)."""
        reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self._has_bias}")

    def forward(self, x):
        check_tensor("GroupNorm", x)
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}): expected "
                             f"input (N, {self.num_channels}, *), got {x.shape}")
        return norms.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(RunningStats):
    RANK = 3  # the batched input rank

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        name = type(self).__name__
        self.num_features = integer(name, "num_features", num_features)
        self.eps = as_given(nonnegative(name, "eps", eps), eps)
        self.momentum = None if momentum is None else as_given(real(name, "momentum", momentum),
                                                              momentum)
        self.affine = flag(name, "affine", affine)
        self.track_running_stats = flag(name, "track_running_stats", track_running_stats)
        self._init_stats(affine, dtype, device, bias)

    def forward(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (self.RANK - 1, self.RANK):
            raise ValueError(f"{name}: expected a {self.RANK - 1}-D (unbatched) or "
                             f"{self.RANK}-D (batched) input, got shape {x.shape}")
        channel_axis = x.ndim - self.RANK + 1
        if self.affine and x.shape[channel_axis] != self.num_features:
            raise ValueError(f"{name}({self.num_features}): expected {self.num_features} "
                             f"channels on axis {channel_axis}, got input of shape {x.shape}")
        unbatched = x.ndim == self.RANK - 1
        if unbatched:
            x = unsqueeze(x, 0)
        use_input = self.training or not self.track_running_stats
        keep = buffers_kept() and use_input
        stats = (None, None) if keep else (self.running_mean, self.running_var)
        out = norms.instance_norm(x, *stats, self.weight, self.bias, use_input,
                                  self.momentum if self.momentum is not None else 0.0,
                                  self.eps)
        return squeeze(out, 0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """PyTorch's InstanceNorm1d over (N, C, L) or (C, L)."""

    RANK = 3


class InstanceNorm2d(_InstanceNorm):
    """PyTorch's InstanceNorm2d over (N, C, H, W) or (C, H, W)."""

    RANK = 4


class InstanceNorm3d(_InstanceNorm):
    """PyTorch's InstanceNorm3d over (N, C, D, H, W) or (C, D, H, W)."""

    RANK = 5


class LocalResponseNorm(Module):
    """PyTorch's LocalResponseNorm(size, alpha, beta, k) across the channels of (N, C, *)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = integer("LocalResponseNorm", "size", size)
        self.alpha = as_given(real("LocalResponseNorm", "alpha", alpha), alpha)
        self.beta = as_given(real("LocalResponseNorm", "beta", beta), beta)
        self.k = as_given(real("LocalResponseNorm", "k", k), k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"

    def forward(self, x):
        return norms.local_response_norm(check_tensor("LocalResponseNorm", x), self.size,
                                         self.alpha, self.beta, self.k)
