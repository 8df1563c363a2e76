"""The Tensor: a backend array, its dtype and device, and its place on the tape."""

from __future__ import annotations

import copy
import math
import numbers

import numpy as np

from fastnn.api import dtypes, registry
from fastnn.api.args import flag, integer
from fastnn.api.device import Device, DeviceSpec, as_device, get_device
from fastnn.api.dtypes import DType, as_dtype
from fastnn.api.errors import BackendError, ShapeError
from fastnn.api.user_warning import warn_user
from fastnn.autograd import functional as autograd
from fastnn.autograd import hooks
from fastnn.ops import core, printing
from fastnn.ops.convert import host_array, inferred_dtype
from fastnn.ops.rng_state import host_rng, manual_seed, rng_of  # noqa: F401 (named here too)
from fastnn.ops.spelling import shape_arg, shape_of
from fastnn.ops.storage import alias, data_of
from fastnn.settings import Size

_new_tuple = tuple.__new__


class Tensor:
    """An n-dimensional array on one device that can record its history for autograd.

    Create tensors with :func:`tensor`, :func:`zeros`, :func:`ones`, :func:`full`
    or :func:`randn` (``Tensor(data)`` is PyTorch's legacy constructor: ops.legacy_tensors).
    """

    # _hooks is set only by the first register_hook / retain_grad (see autograd.hooks)
    __slots__ = ("_data", "_dtype", "_device", "_requires_grad", "_grad", "_node", "_view",
                 "_storage", "_hooks", "__weakref__")
    __array_priority__ = 1000  # so that ndarray + Tensor defers to Tensor.__radd__
    # NumPy ufuncs refuse tensors (np.exp(t) would leave the tape): use t.exp(), or
    # np.exp(t.numpy()). This also makes ndarray + Tensor defer to Tensor.__radd__.
    __array_ufunc__ = None

    @classmethod
    def _make(cls, data, dtype: DType, device: Device) -> Tensor:
        t = object.__new__(cls)
        t._data = data
        t._dtype = dtype
        t._device = device
        t._requires_grad = False
        t._grad = None
        t._node = None
        t._view = None  # a view record when this tensor views another's storage (ops.storage)
        t._storage = None  # the storage record (version, views), made at the first write
        return t

    # ------------------------------------------------------------ properties
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        value = flag("requires_grad", "the value", value)
        if not value and self._node is not None:  # (as PyTorch: a silent no-op would not cut
            raise RuntimeError(  # the tape, and a later backward would still reach x)
                "requires_grad: only a leaf's flag can be changed, and this tensor was made "
                "by a recorded op; take y = x.detach() for a copy outside the tape")
        if value and not self._dtype.is_floating:
            raise TypeError(
                f"only floating-point tensors can require grad, not {self._dtype.name}; "
                f"convert with .to(fnn.float32) first"
            )
        self._requires_grad = value

    @property
    def grad(self):
        """The accumulated gradient (a Tensor like this one), or None. Read on a non-leaf
        that keeps none, it warns as PyTorch's (backward fills only leaves' ``.grad``)."""
        found = self._grad
        if found is None and self._node is not None and not hooks.retains(self):
            warn_user("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                      "accessed. Its .grad attribute won't be populated during "
                      "autograd.backward(). If you indeed want the .grad field to be "
                      "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                      "Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                      "access the leaf Tensor instead.")
        return found

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad must be a fastnn Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape or value._dtype is not self._dtype or not (
                    value._device is self._device or value._device == self._device):
                raise ValueError(
                    f"grad must match the tensor: shape {self.shape}, {self._dtype.name} on "
                    f"{self._device}; got shape {value.shape}, {value._dtype.name} on "
                    f"{value._device}"
                )
        self._grad = value

    @property
    def shape(self) -> Size:
        return _new_tuple(Size, self._data.shape)  # (skips Size's checks: ints already)

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def data(self) -> Tensor:
        """This tensor's storage as a tensor without history (PyTorch's ``x.data``): writes
        through it are seen by ``x`` but not by autograd; ``x.numpy()`` gives the host
        array."""
        return data_of(self)

    @data.setter
    def data(self, value) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"x.data = value: value must be a fastnn Tensor, got "
                            f"{type(value).__name__}; wrap it with fnn.tensor(...) first")
        if value._device != self._device:
            raise ValueError(f"x.data = value: value is on {value._device}, x on "
                             f"{self._device}; move it with .to({str(self._device)!r})")
        alias(value, self)  # x now views value's storage

    @property
    def is_leaf(self) -> bool:
        """Whether no recorded op made this tensor (its gradient goes into ``.grad``)."""
        return self._node is None

    def size(self, dim=None, axis=None):
        """The shape, or the size of one dim (``dim=`` or ``axis=``)."""
        dim = axis if dim is None else dim
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        """As PyTorch prints it (:func:`fastnn.ops.printing.tensor_repr`)."""
        return printing.tensor_repr(self)

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ShapeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                "use .any()/.all() on .numpy() or reduce it first"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    # ------------------------------------------------------------ host and devices
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A host NumPy array (a copy unless the tensor lives on the host already).
        PyTorch's ``force=True`` (detach and copy to the host first) changes nothing here:
        the array is a host one, whatever the tensor's grad or device."""
        return self._device.ops.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: the values, as :meth:`numpy` gives them (before, NumPy wrapped
        the tensor itself in a 0-d object array)."""
        if copy is False and not self._device.backend.record.host_memory:
            raise ValueError(f"np.asarray(tensor, copy=False): a tensor on {self._device} "
                             "cannot be viewed from the host without a copy")
        data = self.numpy()
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(tensor, dtype={np.dtype(dtype)}, copy=False): the "
                                 f"tensor holds {self._dtype.name}; converting needs a copy")
            return data.astype(dtype)
        return data.copy() if copy else data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def detach(self) -> Tensor:
        """The same storage without history: writes through either are seen by both."""
        return alias(self)

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
           memory_format=None) -> Tensor:
        """Move to a device and/or convert to a dtype: ``x.to("cuda")``, ``x.to(fnn.float64)``,
        ``x.to(other)`` (other's device and dtype); ``copy=True`` always copies, as PyTorch's
        (``non_blocking`` and ``memory_format`` are accepted: fastnn's copies are ordered)."""
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg._device, arg._dtype
            elif isinstance(arg, bool):  # PyTorch's positional non_blocking (and copy)
                continue
            elif isinstance(arg, (Device, DeviceSpec, str, int)) and not dtypes.is_dtype(arg):
                device = arg  # (an int: an accelerator index, as PyTorch's x.to(0))
            else:
                dtype = arg
        out = self
        if device is not None:
            try:
                device = as_device(device)
            except BackendError as exc:
                # an installed backend's own error (unusable, no such device index)
                # says all; only an unknown name may be a misspelt dtype
                if not isinstance(device, str) or device.partition(":")[0] in registry._discover():
                    raise
                raise BackendError(
                    f"to: {device!r} is neither a device nor a fastnn dtype "
                    f"({', '.join(dtypes.names())}); {exc}"
                ) from None
            out = core.transfer(out, device)
        if dtype is not None:
            out = core.astype(out, as_dtype(dtype))
        return out.clone() if copy and out is self else out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def float(self) -> Tensor:
        return self.to(dtypes.float32)

    def double(self) -> Tensor:
        return self.to(dtypes.float64)

    # ------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None, *,
                 grad=None) -> None:
        """Add d(self)/d(leaf) into every leaf's ``.grad``, as PyTorch's ``backward``.

        ``gradient`` (also ``grad=``) defaults to 1 and may be omitted only for a
        one-element tensor. ``retain_graph=True`` keeps the graph for another backward
        (default: ``create_graph``); ``create_graph=True`` records the backward itself,
        so ``.grad`` can be differentiated again; ``inputs`` (tensors) restricts the
        accumulation to those.
        """
        if grad is not None:
            if gradient is not None:
                raise TypeError("backward: pass the gradient once, as gradient= or grad=")
            gradient = grad
        if gradient is not None and not isinstance(gradient, Tensor):
            try:
                gradient = tensor(gradient, dtype=self._dtype, device=self._device)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"backward: grad must be a Tensor or array-like of numbers "
                                f"shaped {self.shape}; {exc}") from None
        autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward."""
        hooks.retain_grad(self)

    def register_hook(self, fn):
        """Call ``fn(grad)`` whenever this tensor's gradient is computed; ``fn`` may
        return a replacement. Returns a handle whose ``.remove()`` unregisters it."""
        return hooks.register_hook(self, fn)

    def register_post_accumulate_grad_hook(self, fn):
        """Call ``fn(self)`` after each backward pass added into this leaf's ``.grad``."""
        return hooks.register_post_accumulate_grad_hook(self, fn)

    @property
    def grad_fn(self):
        """The tape node that made this tensor (``.name()``: e.g. ``MulBackward0``), or
        None for a leaf."""
        return self._node

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    def __reduce__(self):
        """Pickle (and ``copy.deepcopy``) as host NumPy data, dtype name, device name and
        requires_grad; unpickling puts the values back on that device, as a leaf without
        ``.grad`` (as PyTorch's)."""
        return _rebuild_tensor, (self.numpy(), self._dtype.name, str(self._device),
                                 self._requires_grad)

    def __deepcopy__(self, memo) -> Tensor:
        """``copy.deepcopy(x)``: as :meth:`__reduce__`, and the gradient copied too, as
        PyTorch's (a Parameter's is not, as PyTorch's)."""
        out = _rebuild_tensor(*self.__reduce__()[1])
        memo[id(self)] = out
        if self._grad is not None:
            out._grad = copy.deepcopy(self._grad, memo)
        return out

    def zero_grad(self) -> None:
        self.grad = None


def _rebuild_tensor(host, dtype: str, device: str, requires_grad: bool) -> Tensor:
    """The tensor :meth:`Tensor.__reduce__` describes (what unpickling calls)."""
    return tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (NumPy array, nested list, scalar or Tensor).

    dtype=None keeps a NumPy array's dtype; Python data as PyTorch infers it: bools -> bool,
    ints -> int64, floats -> the default float dtype (float32; see set_default_dtype).
    """
    if isinstance(data, Tensor):  # a copy keeps its dtype and device by default
        dtype = data.dtype if dtype is None else dtype
        device = data.device if device is None else device
        data = data.numpy()
    if data is None:
        raise TypeError("tensor: data is None; pass a NumPy array, a nested list or a number")
    if dtype is not None:
        dtype = as_dtype(dtype)
    elif isinstance(data, (np.ndarray, np.generic)):
        dtype = as_dtype(data.dtype)
    else:
        dtype = inferred_dtype(data)
    requires_grad = flag("tensor", "requires_grad", requires_grad)
    host = host_array("tensor", data, dtype)
    dev = as_device(device)
    dev.check_dtype(dtype, "tensor")
    out = Tensor._make(dev.ops.from_numpy(host, dev.index), dtype, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


class _NotGiven:
    """The default of full's arguments (None is a value it rejects by name)."""

    def __repr__(self) -> str:
        return "<required>"


_NOT_GIVEN = _NotGiven()


def full(shape=_NOT_GIVEN, value=_NOT_GIVEN, dtype=None, device=None, requires_grad=False, *,
         size=_NOT_GIVEN, fill_value=_NOT_GIVEN) -> Tensor:
    """A new tensor of ``shape`` (one tuple, or an int) filled with ``value``; dtype=None
    takes it from the value as PyTorch: bool, int64 for an int, else the default float. A
    0-d tensor value is read as the Python number it holds, as PyTorch reads it.
    ``size=`` and ``fill_value=`` are PyTorch's keywords for the two (``torch.full((L, L),
    fill_value=min_value)``, as Hugging Face's causal masks are made)."""
    shape = _either("shape", shape, "size", size)
    value = _either("value", value, "fill_value", fill_value)
    if isinstance(value, Tensor) and not value._data.shape:
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"full: value must be a real number, got {type(value).__name__} {value!r}")
    if dtype is None:
        dtype = (dtypes.bool_ if isinstance(value, (bool, np.bool_)) else dtypes.int64
                 if isinstance(value, numbers.Integral) else dtypes.get_default_dtype())
    dtype, dev = as_dtype(dtype), as_device(device)
    requires_grad = flag("full", "requires_grad", requires_grad)
    if dtype.is_floating:
        try:
            value = float(value)
        except OverflowError:  # an int beyond float64, as NumPy rounds it
            value = math.inf if value > 0 else -math.inf
    else:  # as NumPy: truncated toward zero; NaN and Inf have no integer value
        if not math.isfinite(value):
            raise ValueError(f"full: {value!r} cannot be stored in {dtype.name}")
        value = bool(value) if dtype.name == "bool" else int(value)
        dtypes.check_fits("full", value, dtype, "fill value")
    dev.check_dtype(dtype, "full")
    data = dev.ops.full(shape_arg("full", shape), value, dtype.name, dev.index)
    out = Tensor._make(data, dtype, dev)
    return out.requires_grad_(True) if requires_grad else out


def _either(name: str, value, torch_name: str, torch_value):
    """full's argument given as ``name`` or as PyTorch's ``torch_name`` (one of them)."""
    if torch_value is _NOT_GIVEN:
        if value is _NOT_GIVEN:
            raise TypeError(f"full: missing the argument {name} (PyTorch's {torch_name})")
        return value
    if value is not _NOT_GIVEN:
        raise TypeError(f"full: give {name} or {torch_name} (PyTorch's name), not both")
    return torch_value


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with 0, sized by varargs or one tuple (``zeros(2, 3)``,
    ``zeros((2, 3))``) or PyTorch's ``size=``; the default float dtype on the current
    device unless given."""
    return full(shape_of("zeros", sizes, size), 0, dtypes.float_or_default(dtype), device,
                requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with 1, sized as :func:`zeros`."""
    return full(shape_of("ones", sizes, size), 1, dtypes.float_or_default(dtype), device,
                requires_grad)


def randn(*sizes, size=None, dtype=None, device=None, seed=None, requires_grad=False,
          generator=None) -> Tensor:
    """Standard normal samples, sized as :func:`zeros` (``randn(1, 3, 32, 32)``); the same
    ``seed`` gives the same values on every backend; ``generator=`` an fnn.Generator."""
    dtype = dtypes.floating_dtype("randn", dtype)
    rng = rng_of("randn", generator) if seed is None else np.random.default_rng(
        integer("randn", "seed", seed, 0))
    host = rng.standard_normal(shape_of("randn", sizes, size))
    return tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


def rand(*sizes, size=None, dtype=None, device=None, seed=None, requires_grad=False,
         generator=None) -> Tensor:
    """Uniform samples in [0, 1), sized as :func:`zeros`, drawn on the device itself (from
    a seed drawn from ``generator``, fastnn's default one unless given)."""
    dtype, dev = dtypes.floating_dtype("rand", dtype), as_device(device)
    dev.check_dtype(dtype, "rand")
    if seed is None:
        seed = int(rng_of("rand", generator).integers(2**31))
    seed = integer("rand", "seed", seed, 0)
    data = dev.ops.uniform(shape_of("rand", sizes, size), dtype.name, dev.index, seed)
    out = Tensor._make(data, dtype, dev)
    return out.requires_grad_(True) if flag("rand", "requires_grad", requires_grad) else out




__all__ = ["Tensor", "tensor", "full", "zeros", "ones", "randn", "rand", "manual_seed",
           "host_rng", "get_device"]
