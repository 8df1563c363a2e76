"""PyTorch's placeholders of the lazy modules: :class:`UninitializedParameter` and
:class:`UninitializedBuffer`.

They know their dtype, device, ``requires_grad`` (and, for a parameter, its
``param_class``) but have no shape and no values: reading ``.shape`` raises PyTorch's
RuntimeError, and any op that reaches their data raises PyTorch's ValueError ("Attempted to
use an uninitialized parameter ..."). :meth:`~UninitializedTensorMixin.materialize` gives
one a shape, in place: it then becomes a plain :class:`~fastnn.nn.Parameter` (or Tensor),
the same object, so references taken before (``w = layer.weight``) see the values.

Internally the placeholder keeps an empty array of its dtype on its device, so that
``module.to(...)`` moves it as it moves the rest (what PyTorch allows before a dry run).
"""

from __future__ import annotations

import sys

import numpy as np

from fastnn.api import dtypes
from fastnn.api.device import as_device
from fastnn.nn.parameter import Parameter
from fastnn.ops.tensor import Tensor

_SLOT = Tensor.__dict__["_data"]  # the real slot, which the placeholders' property hides

SHAPE_MESSAGE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually "
    "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
    "initialized one. Call `forward` to initialize the parameters before accessing their "
    "attributes.")


def _use_message(where: str) -> str:
    return (f"Attempted to use an uninitialized parameter in {where}. This error happens when "
            "you are using a `LazyModule` or explicitly manipulating "
            "`fastnn.nn.UninitializedParameter` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling fastnn "
            "functions")


def _refuse(self):
    raise ValueError(_use_message(sys._getframe(1).f_code.co_name))


def _store(self, data) -> None:
    _SLOT.__set__(self, data)


def _empty(dtype, device):
    dtype = dtypes.as_dtype(dtype if dtype is not None else dtypes.get_default_dtype())
    dev = as_device(device)
    dev.check_dtype(dtype, "UninitializedParameter")
    return dev.ops.from_numpy(np.zeros(0, dtype.numpy), dev.index), dtype, dev


class UninitializedTensorMixin:
    """What both placeholders share: no shape, no values, ``materialize``."""

    __slots__ = ()
    cls_to_become: type = Tensor

    _data = property(_refuse, _store)

    @property
    def shape(self):
        raise RuntimeError(SHAPE_MESSAGE)

    ndim = shape

    def size(self, dim=None, axis=None):
        raise RuntimeError(SHAPE_MESSAGE)

    def numel(self):
        raise RuntimeError(SHAPE_MESSAGE)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __hash__(self) -> int:
        return id(self)

    def _placeholder(self) -> Tensor:
        """A plain empty tensor of this placeholder's dtype and device (Module.to moves it)."""
        return Tensor._make(_SLOT.__get__(self), self._dtype, self._device)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the placeholder ``shape`` (zeros), in place, on ``device`` as ``dtype`` (its
        own by default): it becomes a plain Parameter (a Tensor for a buffer)."""
        dtype = self._dtype if dtype is None else dtype
        device = self._device if device is None else device
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = dtypes.as_dtype(dtype)
        dev = as_device(device)
        self._materialize_data(dev.ops.from_numpy(np.zeros(shape, dtype.numpy), dev.index),
                               dtype, dev)

    def _materialize_data(self, data, dtype=None, device=None) -> None:
        """Become ``cls_to_become`` holding the backend array ``data``."""
        _SLOT.__set__(self, data)
        if dtype is not None:
            self._dtype = dtype
        if device is not None:
            self._device = device
        self.__class__ = self.cls_to_become

    def __reduce__(self):
        return _rebuild, (type(self), self._dtype.name, str(self._device), self._requires_grad,
                          getattr(self, "param_class", None))

    def __deepcopy__(self, memo):
        out = _rebuild(*self.__reduce__()[1])
        memo[id(self)] = out
        return out


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """PyTorch's ``nn.UninitializedParameter(requires_grad=True, device=None, dtype=None)``:
    a parameter whose shape a lazy module's first forward decides; fastnn's
    ``param_class=`` names its role as for :class:`Parameter`."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None,
                param_class: str = "other"):
        p = Parameter.from_numpy(np.zeros(0), param_class, dtype, device, False)
        p.__class__ = cls
        p.requires_grad = requires_grad
        return p


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """PyTorch's ``nn.UninitializedBuffer(requires_grad=False, device=None, dtype=None)``:
    a buffer whose shape a lazy module's first forward decides (BatchNorm's running
    statistics)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        data, dtype, dev = _empty(dtype, device)
        t = Tensor._make.__func__(cls, data, dtype, dev)
        t.requires_grad = requires_grad
        return t


def is_uninitialized(t) -> bool:
    """Whether ``t`` is a placeholder (an UninitializedParameter or UninitializedBuffer)."""
    return isinstance(t, UninitializedTensorMixin)


def _rebuild(cls, dtype: str, device: str, requires_grad: bool, param_class):
    if cls is UninitializedParameter:
        return UninitializedParameter(requires_grad, device, dtype, param_class or "other")
    return cls(requires_grad, device, dtype)
