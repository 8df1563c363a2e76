"""Pooling layers with PyTorch's names and arguments (no parameters).

Each is its functional form (:mod:`fastnn.ops.pooling`) as a module; ``reverse``
is the base class's, from the tape.
"""

from __future__ import annotations

from fastnn.nn.module import Module, tape_reverse
from fastnn.ops import pooling, pooling3d, pooling3d_max, pooling_lp, pooling_max


class _Pool(Module):
    """A pooling layer: ``forward`` is ``FUNCTION(x, **self.options)``."""

    FUNCTION = None
    ARGS: tuple = ()
    #: the options the repr shows, in order, as PyTorch's (None: all of ARGS)
    REPR: tuple | None = None
    #: repr each shown int as a tuple of this many (PyTorch's AvgPool1d and MaxUnpoolNd
    #: keep their sizes as tuples); 0: as given
    TUPLES = 0
    STRIDE_AS_GIVEN = False  # LPPool's: its repr shows stride=None when none was given

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
        self._given_stride = options.get("stride")  # (LPPool's repr shows it as given)
        if "kernel_size" in options and options.get("stride") is None:
            options["stride"] = options["kernel_size"]
        self.options = options
        for name, value in options.items():
            object.__setattr__(self, name, value)

    def extra_repr(self) -> str:
        names = self.options if self.REPR is None else self.REPR
        return ", ".join(f"{name}={self._shown(name)}" for name in names)

    def _shown(self, name: str):
        value = self._given_stride if name == "stride" and self.STRIDE_AS_GIVEN else \
            self.options[name]
        if self.TUPLES and isinstance(value, int) and not isinstance(value, bool):
            return (value,) * self.TUPLES
        return value

    def forward(self, x):
        return type(self).FUNCTION(x, **self.options)

    def reverse(self, x, grad_out):
        """The base class's, through the output alone when it comes with indices."""
        if not self.options.get("return_indices"):
            return super().reverse(x, grad_out)
        return tape_reverse(self, lambda t: self.forward(t)[0], x, grad_out)


_MAX = (("kernel_size", None), ("stride", None), ("padding", 0), ("dilation", 1),
        ("return_indices", False), ("ceil_mode", False))
_AVG = (("kernel_size", None), ("stride", None), ("padding", 0), ("ceil_mode", False),
        ("count_include_pad", True))
_MAX_REPR = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
_AVG_REPR = ("kernel_size", "stride", "padding")


# PyTorch's bases of each family (torch.nn.modules.pooling), which scripts test layers
# against (isinstance(m, _MaxPoolNd)) and subclass
class _MaxPoolNd(_Pool):
    """The base of MaxPool1d/2d/3d: PyTorch's _MaxPoolNd(kernel_size, stride=None,
    padding=0, dilation=1, return_indices=False, ceil_mode=False)."""

    ARGS, REPR = _MAX, _MAX_REPR


class _AvgPoolNd(_Pool):
    """The base of AvgPool1d/2d/3d (PyTorch's _AvgPoolNd)."""

    ARGS, REPR = _AVG, _AVG_REPR


class _AdaptiveAvgPoolNd(_Pool):
    """The base of AdaptiveAvgPool1d/2d/3d: PyTorch's _AdaptiveAvgPoolNd(output_size)."""

    ARGS = (("output_size", None),)


class _AdaptiveMaxPoolNd(_Pool):
    """The base of AdaptiveMaxPool1d/2d/3d: PyTorch's _AdaptiveMaxPoolNd(output_size,
    return_indices=False)."""

    ARGS, REPR = (("output_size", None), ("return_indices", False)), ("output_size",)


class MaxPool1d(_MaxPoolNd):
    """PyTorch's MaxPool1d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False)."""

    FUNCTION, ARGS, REPR = staticmethod(pooling.max_pool1d), _MAX, _MAX_REPR


class MaxPool2d(_MaxPoolNd):
    """PyTorch's MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False): with return_indices, forward returns
    (output, indices), the indices flat in each input plane (for MaxUnpool2d)."""

    FUNCTION, ARGS, REPR = staticmethod(pooling.max_pool2d), _MAX, _MAX_REPR


class AvgPool1d(_AvgPoolNd):
    """PyTorch's AvgPool1d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True)."""

    FUNCTION, ARGS, REPR, TUPLES = staticmethod(pooling.avg_pool1d), _AVG, _AVG_REPR, 1


class AvgPool2d(_AvgPoolNd):
    """PyTorch's AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)."""

    FUNCTION, ARGS = staticmethod(pooling.avg_pool2d), _AVG + (("divisor_override", None),)
    REPR = _AVG_REPR


class MaxPool3d(_MaxPoolNd):
    """PyTorch's MaxPool3d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False)."""

    FUNCTION, ARGS, REPR = staticmethod(pooling3d.max_pool3d), _MAX, _MAX_REPR


class AvgPool3d(_AvgPoolNd):
    """PyTorch's AvgPool3d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)."""

    FUNCTION, ARGS = staticmethod(pooling3d.avg_pool3d), _AVG + (("divisor_override", None),)
    REPR = _AVG_REPR


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """PyTorch's AdaptiveAvgPool3d(output_size): an int, or a triple (None keeps that size)."""

    FUNCTION, ARGS = staticmethod(pooling3d.adaptive_avg_pool3d), (("output_size", None),)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """PyTorch's AdaptiveAvgPool1d(output_size)."""

    FUNCTION, ARGS = staticmethod(pooling.adaptive_avg_pool1d), (("output_size", None),)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """PyTorch's AdaptiveAvgPool2d(output_size): an int, or a pair (None keeps that size)."""

    FUNCTION, ARGS = staticmethod(pooling.adaptive_avg_pool2d), (("output_size", None),)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """PyTorch's AdaptiveMaxPool1d(output_size, return_indices=False)."""

    FUNCTION = staticmethod(pooling_max.adaptive_max_pool1d)
    ARGS, REPR = (("output_size", None), ("return_indices", False)), ("output_size",)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """PyTorch's AdaptiveMaxPool2d(output_size, return_indices=False): output_size an int,
    or a pair whose None keeps that size."""

    FUNCTION = staticmethod(pooling_max.adaptive_max_pool2d)
    ARGS, REPR = (("output_size", None), ("return_indices", False)), ("output_size",)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """PyTorch's AdaptiveMaxPool3d(output_size, return_indices=False): output_size an int,
    or a triple whose None keeps that size."""

    FUNCTION = staticmethod(pooling3d_max.adaptive_max_pool3d)
    ARGS, REPR = (("output_size", None), ("return_indices", False)), ("output_size",)


class _MaxUnpoolNd(_Pool):
    """The base of MaxUnpool1d/2d/3d (PyTorch's _MaxUnpoolNd)."""

    ARGS = (("kernel_size", None), ("stride", None), ("padding", 0))

    def forward(self, x, indices, output_size=None):
        return type(self).FUNCTION(x, indices, output_size=output_size, **self.options)


class MaxUnpool1d(_MaxUnpoolNd):
    """PyTorch's MaxUnpool1d(kernel_size, stride=None, padding=0); forward(x, indices,
    output_size=None) with the indices of MaxPool1d(return_indices=True)."""

    FUNCTION, TUPLES = staticmethod(pooling_max.max_unpool1d), 1


class MaxUnpool2d(_MaxUnpoolNd):
    """PyTorch's MaxUnpool2d(kernel_size, stride=None, padding=0); forward(x, indices,
    output_size=None) with the indices of MaxPool2d(return_indices=True)."""

    FUNCTION, TUPLES = staticmethod(pooling_max.max_unpool2d), 2


class MaxUnpool3d(_MaxUnpoolNd):
    """PyTorch's MaxUnpool3d(kernel_size, stride=None, padding=0); forward(x, indices,
    output_size=None) with the flat indices d H W + h W + w of each value."""

    FUNCTION, TUPLES = staticmethod(pooling3d_max.max_unpool3d), 3


_LP = (("norm_type", None), ("kernel_size", None), ("stride", None), ("ceil_mode", False))


class _LPPoolNd(_Pool):
    """The base of LPPool1d/2d/3d: PyTorch's _LPPoolNd(norm_type, kernel_size, stride=None,
    ceil_mode=False)."""

    ARGS, STRIDE_AS_GIVEN = _LP, True


class LPPool1d(_LPPoolNd):
    """PyTorch's LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    FUNCTION, ARGS = staticmethod(pooling_lp.lp_pool1d), _LP


class LPPool2d(_LPPoolNd):
    """PyTorch's LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    FUNCTION, ARGS = staticmethod(pooling_lp.lp_pool2d), _LP


class LPPool3d(_LPPoolNd):
    """PyTorch's LPPool3d(norm_type, kernel_size, stride=None, ceil_mode=False)."""

    FUNCTION, ARGS = staticmethod(pooling_lp.lp_pool3d), _LP
