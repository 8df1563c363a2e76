"""Parameters: the leaf tensors a module owns and an optimizer updates, and how layers
initialise them."""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.api.device import as_device
from fastnn.api.dtypes import as_dtype
from fastnn.nn import init
from fastnn.ops.convert import host_array
from fastnn.ops.storage import alias
from fastnn.ops.tensor import Tensor, host_rng

PARAM_CLASSES = ("connective", "bias", "activation", "other")
"""The roles a Parameter may play (``Parameter.param_class``): optimizers apply L1 to
connective parameters only, weight decay to the classes of ``decay_classes`` when it is
given (minidx's rule: connective), and scale learning rates per class."""
class Parameter(Tensor):
    """A leaf tensor that a module owns and an optimizer updates.

    ``param_class`` says what role it plays, which optimizers use for L1, for weight
    decay with ``decay_classes=`` and for per-class learning rates: ``"connective"``
    (weights, scales), ``"bias"``, ``"activation"`` (learnable activation
    shapes such as Swish's beta) or ``"other"``.
    """

    __slots__ = ("param_class",)

    def __new__(cls, data=None, requires_grad: bool = True, param_class: str = "other"):
        """``Parameter(data, requires_grad=True)``, as PyTorch's (``data=None``: an empty
        tensor), or fastnn's ``Parameter(data, "bias")`` naming its ``param_class``.

        From a Tensor, the parameter is a new leaf sharing ``data``'s storage, as
        PyTorch's: a write through either is seen by both, and the parameter has none of
        ``data``'s history. It keeps data's dtype and device. Anything else (a NumPy array,
        nested lists) is copied into the default float dtype (float32 unless
        ``fnn.set_default_dtype`` changed it) on the current device. An integer dtype needs
        ``requires_grad=False``, as in PyTorch.
        """
        if isinstance(requires_grad, str):  # Parameter(data, "bias"): fastnn's param_class
            param_class, requires_grad = requires_grad, True
        if data is None:
            data = np.zeros(0, dtypes.get_default_dtype().numpy)
        if isinstance(data, Tensor):
            _check(param_class, data._dtype, requires_grad)
            p = cls._make(data._data, data._dtype, data._device)
            alias(data, out=p)  # a view of all of data's storage, without its history
            p.requires_grad = bool(requires_grad)
            p.param_class = param_class
            return p
        return cls.from_numpy(data, param_class, requires_grad=requires_grad)

    @classmethod
    def from_numpy(cls, array, param_class="other", dtype=None, device=None,
                   requires_grad: bool = True) -> Parameter:
        """A parameter holding a copy of the host array ``array``."""
        dtype = as_dtype(dtype if dtype is not None else dtypes.get_default_dtype())
        _check(param_class, dtype, requires_grad)
        dev = as_device(device)
        dev.check_dtype(dtype, "Parameter")
        if array is None:
            raise TypeError("Parameter: data is None; pass a Tensor, a NumPy array or a nested "
                            "list of numbers")
        host = host_array("Parameter", array, dtype)
        p = cls._make(dev.ops.from_numpy(host, dev.index), dtype, dev)
        p.requires_grad = bool(requires_grad)
        p.param_class = param_class
        return p

    def __deepcopy__(self, memo) -> Parameter:
        """A new parameter with a copy of the values (``copy.deepcopy(model)``); the gradient
        is not copied, as in PyTorch."""
        out = Parameter.from_numpy(self.numpy(), self.param_class, self._dtype, self._device)
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        return out

    def __reduce__(self):
        """Pickle as host data, dtype, device, param_class and requires_grad (no ``.grad``);
        unpickling puts the values back on that device."""
        return _rebuild_parameter, (self.numpy(), self._dtype.name, str(self._device),
                                    self.param_class, self._requires_grad)

    def __repr__(self) -> str:
        """As PyTorch prints a parameter: ``Parameter containing:`` and the tensor."""
        return "Parameter containing:\n" + super().__repr__()


def _check(param_class: str, dtype, requires_grad) -> None:
    if param_class not in PARAM_CLASSES:
        raise ValueError(
            f"Parameter: param_class must be one of {PARAM_CLASSES}, got {param_class!r}")
    if requires_grad and not dtype.is_floating:
        raise RuntimeError(f"Parameter: only tensors of floating point dtype can require "
                           f"gradients, got {dtype.name}; pass requires_grad=False")


def _rebuild_parameter(host, dtype: str, device: str, param_class: str,
                       requires_grad: bool) -> Parameter:
    """The parameter :meth:`Parameter.__reduce__` describes (what unpickling calls)."""
    p = Parameter.from_numpy(host, param_class, dtype, device)
    p.requires_grad = requires_grad
    return p


class Buffer:
    """A tensor that becomes a buffer of the module it is assigned to, as PyTorch's
    ``nn.Buffer``: ``self.mask = nn.Buffer(fnn.ones(3), persistent=False)`` is
    ``self.register_buffer("mask", fnn.ones(3), persistent=False)`` (the module keeps the
    tensor itself)."""

    __slots__ = ("data", "persistent")

    def __init__(self, data=None, *, persistent: bool = True):
        if data is None:
            data = Tensor._make(as_device(None).ops.from_numpy(
                np.zeros(0, dtypes.get_default_dtype().numpy), as_device(None).index),
                dtypes.get_default_dtype(), as_device(None))
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a fastnn Tensor or None, got "
                            f"{type(data).__name__}")
        self.data, self.persistent = data, bool(persistent)


def uniform_init(shape, bound: float, param_class: str, dtype, device) -> Parameter:
    """U(-bound, bound) from fastnn's host generator (``fnn.manual_seed`` reproduces it)."""
    host = host_rng().uniform(-bound, bound, size=shape)
    return Parameter.from_numpy(host, param_class, dtype, device)


def fan_in_bound(fan_in: int) -> float:
    """PyTorch's default bound 1/sqrt(fan_in) (kaiming-uniform with a = sqrt(5))."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def reset_fan_in_uniform(module, fan_in=None) -> None:
    """The default draw of PyTorch's Linear, Bilinear and convolution layers, again and in
    place: ``weight`` and ``bias`` (when there is one) from U(-b, b), b = 1/sqrt(fan_in)
    (kaiming_uniform_ with a = sqrt(5)); ``fan_in`` the weight's dim 1 times its kernel
    size unless given (Bilinear's is its in1_features)."""
    weight = module.weight
    if fan_in is None:
        fan_in = math.prod(weight.shape[1:])
    bound = fan_in_bound(fan_in)
    for param in (weight, getattr(module, "bias", None)):
        if param is not None:
            init.uniform_(param, -bound, bound)


def const_init(shape, value: float, param_class: str, dtype, device) -> Parameter:
    return Parameter.from_numpy(np.full(shape, value), param_class, dtype, device)


def wrap(data, like: Tensor) -> Tensor:
    """A plain (history-free) tensor of raw backend ``data`` on ``like``'s dtype and device."""
    return Tensor._make(data, like._dtype, like._device)
