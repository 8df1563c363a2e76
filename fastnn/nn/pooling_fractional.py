"""FractionalMaxPool2d and FractionalMaxPool3d, PyTorch's (no parameters).

Each is :mod:`fastnn.ops.pooling_fractional`'s op as a module. ``_random_samples`` given to
the constructor is kept as a buffer (in ``state_dict``, moved and cast with the module), so
that every call pools over the same windows; without it each call draws new samples from
fastnn's generator (:func:`fastnn.rand`), as PyTorch draws from its own. ``reverse`` is the
tape's (through the output alone when it comes with indices); it runs forward again, so it
differentiates the same windows only where the samples are given.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

from fastnn.nn.module import Module, tape_reverse
from fastnn.ops import pooling_fractional


def _repeat(value, count: int):
    """PyTorch's ``_pair`` / ``_triple``: an iterable as a tuple, else ``count`` copies."""
    if value is None:
        return None
    return tuple(value) if isinstance(value, Iterable) else (value,) * count


class _FractionalMaxPool(Module):
    DIMS = 2
    FUNCTION = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):
        super().__init__()
        name, dims = type(self).__name__, self.DIMS
        sizes = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,)
        if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k > 0
                   for k in sizes):
            raise ValueError(f"{name}: kernel_size must be an int or a tuple of {dims} ints, "
                             f"each greater than 0, but got {kernel_size!r}")
        self.kernel_size = _repeat(kernel_size, dims)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _repeat(output_size, dims)
        self.output_ratio = _repeat(output_ratio, dims)
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be "
                             f"specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"{name}: output_ratio must be between 0 and 1 (got "
                             f"{output_ratio})")

    def forward(self, input):  # noqa: A002
        return type(self).FUNCTION(input, self.kernel_size, self.output_size, self.output_ratio,
                                   self.return_indices, _random_samples=self._random_samples)

    def reverse(self, x, grad_out):
        """The tape's, through the output alone when it comes with indices."""
        if not self.return_indices:
            return super().reverse(x, grad_out)
        return tape_reverse(self, lambda t: self.forward(t)[0], x, grad_out)


class FractionalMaxPool2d(_FractionalMaxPool):
    """PyTorch's FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None,
    return_indices=False, _random_samples=None): max over pseudo-random (kH, kW) windows of
    (N, C, H, W) or (C, H, W); with return_indices, forward returns (output, indices), the
    indices flat in each input plane (for MaxUnpool2d)."""

    DIMS, FUNCTION = 2, staticmethod(pooling_fractional.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPool):
    """PyTorch's FractionalMaxPool3d(kernel_size, output_size=None, output_ratio=None,
    return_indices=False, _random_samples=None): max over pseudo-random (kT, kH, kW)
    windows of (N, C, T, H, W) or (C, T, H, W); with return_indices, forward returns
    (output, indices), the indices flat in each input plane (for MaxUnpool3d)."""

    DIMS, FUNCTION = 3, staticmethod(pooling_fractional.fractional_max_pool3d)
