"""PyTorch's padding layers: ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d and CircularPad1d/2d/3d, over ``F.pad`` (no parameters; ``reverse``
is the tape's).

``padding`` is an int (every side) or PyTorch's tuple (left, right[, top, bottom[, front,
back]]), last dim first; a layer for k spatial dims takes a (k + 1)-D (unbatched) or
(k + 2)-D input, as PyTorch's.
"""

from __future__ import annotations

import numbers

from fastnn.api.args import as_given, real
from fastnn.nn.module import Module, check_tensor
from fastnn.ops.joining import pad


class _Pad(Module):
    """A padding layer: ``F.pad(x, padding, MODE, value)`` over the last DIMS dims."""

    MODE = "constant"
    DIMS = 1

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        name, sides = type(self).__name__, 2 * self.DIMS
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            padding = (int(padding),) * sides
        if (not isinstance(padding, (tuple, list)) or len(padding) != sides
                or any(isinstance(p, bool) or not isinstance(p, numbers.Integral)
                       for p in padding)):
            raise ValueError(f"{name}: padding must be an int or {sides} ints, got "
                             f"{padding!r}")
        self.padding = tuple(int(p) for p in padding)
        self.value = as_given(real(name, "value", value), value)

    def extra_repr(self) -> str:
        if self.MODE == "constant" and not type(self).__name__.startswith("Zero"):
            return f"padding={self.padding}, value={self.value}"  # (PyTorch's ConstantPadNd)
        return f"{self.padding}"

    def forward(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (self.DIMS + 1, self.DIMS + 2):
            raise ValueError(f"{name}: expected a {self.DIMS + 1}-D or {self.DIMS + 2}-D input, "
                             f"got shape {x.shape}")
        return pad(x, self.padding, self.MODE, self.value)


class _ConstantPadNd(_Pad):
    """The base of ConstantPad1d/2d/3d and ZeroPad1d/2d/3d (PyTorch's _ConstantPadNd)."""

    MODE = "constant"


class _ReflectionPadNd(_Pad):
    """The base of ReflectionPad1d/2d/3d (PyTorch's _ReflectionPadNd)."""

    MODE = "reflect"


class _ReplicationPadNd(_Pad):
    """The base of ReplicationPad1d/2d/3d (PyTorch's _ReplicationPadNd)."""

    MODE = "replicate"


class _CircularPadNd(_Pad):
    """The base of CircularPad1d/2d/3d (PyTorch's _CircularPadNd)."""

    MODE = "circular"


# PyTorch's bases, which scripts test layers against (isinstance(m, _ReflectionPadNd))
_BASES = {base.MODE: base for base in (_ConstantPadNd, _ReflectionPadNd, _ReplicationPadNd,
                                       _CircularPadNd)}


def _layer(dims: int, name: str, doc: str, base: type):
    cls = type(name, (base,), {"DIMS": dims, "__doc__": doc, "__module__": __name__})
    if base.MODE != "constant":
        def __init__(self, padding):
            _Pad.__init__(self, padding)

        cls.__init__ = __init__
    elif name.startswith("Zero"):
        def __init__(self, padding):
            _Pad.__init__(self, padding, 0.0)

        cls.__init__ = __init__
    return cls


_WHAT = {"constant": "a constant ``value``", "reflect": "the reflection of the input (edge "
         "not repeated)", "replicate": "copies of the edge", "circular": "the input wrapped "
         "around"}
_NAMES = {"constant": "ConstantPad", "reflect": "ReflectionPad", "replicate": "ReplicationPad",
          "circular": "CircularPad"}

ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d, \
    ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, CircularPad1d, \
    CircularPad2d, CircularPad3d = (
        _layer(k, f"{_NAMES[mode]}{k}d",
               f"PyTorch's {_NAMES[mode]}{k}d: pads the last {k} dim(s) with {_WHAT[mode]}.",
               _BASES[mode])
        for mode in ("constant", "reflect", "replicate", "circular") for k in (1, 2, 3))
# a ZeroPadNd is a ConstantPadNd, as PyTorch's
ZeroPad1d = _layer(1, "ZeroPad1d", "PyTorch's ZeroPad1d: pads the last dim with zeros.",
                   ConstantPad1d)
ZeroPad2d = _layer(2, "ZeroPad2d", "PyTorch's ZeroPad2d: pads the last 2 dims with zeros.",
                   ConstantPad2d)
ZeroPad3d = _layer(3, "ZeroPad3d", "PyTorch's ZeroPad3d: pads the last 3 dims with zeros.",
                   ConstantPad3d)
