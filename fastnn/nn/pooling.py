"""Pooling layers with PyTorch's names and arguments (no parameters).

Each is its functional form (:mod:`fastnn.ops.pooling`) as a module; ``reverse``
is the base class's, from the tape.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.ops import pooling


class _Pool(Module):
    """A pooling layer: ``forward`` is ``FUNCTION(x, **self.options)``."""

    FUNCTION = None
    ARGS: tuple = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        names = self.ARGS
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}: takes at most {len(names)} positional "
                            f"arguments ({', '.join(n for n, _ in names)}), got {len(args)}")
        options = dict(zip((n for n, _ in names), args))
        for name, default in names[len(args):]:
            options[name] = kwargs.pop(name, default)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(kwargs)}")
        if options.get("return_indices"):
            raise NotImplementedError(f"{type(self).__name__}: return_indices=True is not "
                                      f"supported")
        options.pop("return_indices", None)
        if "kernel_size" in options and options.get("stride") is None:
            options["stride"] = options["kernel_size"]
        self.options = options
        for name, value in options.items():
            object.__setattr__(self, name, value)

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={value!r}" for name, value in self.options.items())

    def forward(self, x):
        return type(self).FUNCTION(x, **self.options)


_MAX = (("kernel_size", None), ("stride", None), ("padding", 0), ("dilation", 1),
        ("return_indices", False), ("ceil_mode", False))
_AVG = (("kernel_size", None), ("stride", None), ("padding", 0), ("ceil_mode", False),
        ("count_include_pad", True))


class MaxPool1d(_Pool):
    """PyTorch's MaxPool1d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)."""

    FUNCTION, ARGS = staticmethod(pooling.max_pool1d), _MAX


class MaxPool2d(_Pool):
    """PyTorch's MaxPool2d(kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)."""

    FUNCTION, ARGS = staticmethod(pooling.max_pool2d), _MAX


class AvgPool1d(_Pool):
    """PyTorch's AvgPool1d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True)."""

    FUNCTION, ARGS = staticmethod(pooling.avg_pool1d), _AVG


class AvgPool2d(_Pool):
    """PyTorch's AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)."""

    FUNCTION, ARGS = staticmethod(pooling.avg_pool2d), _AVG + (("divisor_override", None),)


class AdaptiveAvgPool1d(_Pool):
    """PyTorch's AdaptiveAvgPool1d(output_size)."""

    FUNCTION, ARGS = staticmethod(pooling.adaptive_avg_pool1d), (("output_size", None),)


class AdaptiveAvgPool2d(_Pool):
    """PyTorch's AdaptiveAvgPool2d(output_size): an int, or a pair (None keeps that size)."""

    FUNCTION, ARGS = staticmethod(pooling.adaptive_avg_pool2d), (("output_size", None),)
