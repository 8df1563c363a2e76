"""PyTorch's shared base classes of the convolutions and the dropouts, under its names.

Code written for PyTorch tells layers apart by their bases: ``isinstance(m,
nn.modules.conv._ConvNd)`` in an init loop, ``isinstance(m, nn.modules.dropout._DropoutNd)``
to switch dropout off. fastnn's layers keep their own ``__init__`` and ``forward``; these
bases make such checks answer as PyTorch's do (``fastnn.nn.modules`` names them where
PyTorch has them); the convolutions' base also makes and redraws their parameters.
"""

from __future__ import annotations

import math

from fastnn.api.args import flag
from fastnn.nn.module import Module
from fastnn.nn.parameter import fan_in_bound, reset_fan_in_uniform, uniform_init


class _ConvNd(Module):
    """What every convolution is an instance of: Conv1d/2d/3d, the transposed ones and
    their lazy forms (PyTorch's ``torch.nn.modules.conv._ConvNd``)."""

    def _init_parameters(self, weight_shape: tuple, bias, dtype, device) -> None:
        """Check that ``groups`` divides both channel counts, then make ``weight`` (of
        ``weight_shape``, class connective) and ``bias`` ((out_channels,), class bias; None
        for ``bias=False``), both U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with PyTorch's fan_in:
        the product of the weight's dims after the first."""
        name = type(self).__name__
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{name}: in_channels={self.in_channels} and out_channels="
                             f"{self.out_channels} must both be divisible by "
                             f"groups={self.groups}")
        bound = fan_in_bound(math.prod(weight_shape[1:]))
        self.weight = uniform_init(weight_shape, bound, "connective", dtype, device)
        self.bias = None
        if flag(name, "bias", bias):
            self.bias = uniform_init((self.out_channels,), bound, "bias", dtype, device)

    def reset_parameters(self) -> None:
        """Draw the parameters again, in place, as at construction (PyTorch's init)."""
        reset_fan_in_uniform(self)


class _DropoutNd(Module):
    """What every dropout layer is an instance of: Dropout, Dropout1d/2d/3d, AlphaDropout
    and FeatureAlphaDropout (PyTorch's ``torch.nn.modules.dropout._DropoutNd``)."""
