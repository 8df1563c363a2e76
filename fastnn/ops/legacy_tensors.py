"""PyTorch's legacy tensor constructors: ``torch.Tensor(data)``, ``torch.Tensor(2, 3)``,
``torch.FloatTensor([...])``, ``torch.LongTensor(...)`` and the other typed names.

Older scripts (and many tutorials) still build tensors this way. As PyTorch's:

- ``Tensor()`` is an empty tensor of the default dtype; ``Tensor(*sizes)`` (ints, or one
  ``fnn.Size``) an uninitialised one of that shape; ``Tensor(data)`` (a list, a NumPy
  array, a number sequence) a copy converted to the default dtype (``torch.Tensor``
  follows ``set_default_dtype``); ``Tensor(t)`` of a tensor of that dtype shares t's
  storage (no history), of another dtype is an error;
- ``torch.autograd.Variable(t, requires_grad=...)`` (fastnn.autograd.variable) is t's
  storage as a new leaf;
- the typed names do the same with their own dtype (``FloatTensor`` float32,
  ``DoubleTensor`` float64, ``HalfTensor`` float16, ``ByteTensor`` uint8,
  ``CharTensor`` int8, ``ShortTensor`` int16, ``IntTensor`` int32, ``LongTensor``
  int64, ``BoolTensor`` bool), and ``isinstance(x, fnn.FloatTensor)`` asks x's dtype.
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.api.device import set_default_device
from fastnn.autograd import variable
from fastnn.ops.aliases import _BY_TYPE_NAME, _TYPE_NAMES
from fastnn.ops.creation import empty
from fastnn.ops.table import METHODS, public
from fastnn.ops.tensor import Tensor, tensor
from fastnn.settings import Size


def construct(dtype, args: tuple, device=None):
    """The legacy constructor's tensor of ``dtype`` (see the module)."""
    name = dtype.name
    if not args:
        return empty((0,), dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        if any(a < 0 for a in args):
            raise ValueError(f"Tensor: sizes must be non-negative, got {args}")
        return empty(tuple(int(a) for a in args), dtype=dtype, device=device)
    if len(args) != 1:
        raise TypeError(f"{_TYPE_NAMES.get(name, 'Tensor')}: expected sizes (ints) or one "
                        f"sequence of data, got {len(args)} arguments {args!r}")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not dtype:
            raise TypeError(f"{_TYPE_NAMES.get(name, 'Tensor')}: expected a {name} tensor "
                            f"(got {data.dtype.name}); convert with t.to(fnn.{name})")
        return data.detach()  # (PyTorch's: the same storage, without history)
    return tensor(data, dtype=dtype, device=device)


def _device_only(owner: str, kwargs: dict, instead: str, default=None):
    """The ``device=`` keyword, the only one the legacy constructors take."""
    unknown = set(kwargs) - {"device"}
    if unknown:
        raise TypeError(f"{owner}: unexpected keyword arguments {sorted(unknown)}; use "
                        f"{instead}")
    return kwargs.get("device", default)


def _default_new(cls, *args, **kwargs):
    """``Tensor(...)``: :func:`construct` with the default dtype (Tensor.__new__)."""
    device = _device_only("Tensor", kwargs, "fnn.tensor(data, dtype=..., device=...)")
    return construct(dtypes.get_default_dtype(), args, device)


def _new(x, *args, **kwargs):
    """``x.new(data)`` / ``x.new(*sizes)``: the legacy constructor with x's dtype and device."""
    device = _device_only("Tensor.new", kwargs, "x.new_tensor(data, dtype=...) or "
                          "x.new_empty(sizes, dtype=...)", x.device)
    return construct(x.dtype, args, device)


METHODS["__new__"] = _default_new  # (bound with the other methods: Tensor(data) works)
METHODS["new"] = _new


class _Typed(type):
    """The metaclass of the typed names: calling one constructs, isinstance asks dtype."""

    def __call__(cls, *args, device=None):
        return construct(cls.dtype, args, device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype


def _typed(name: str, dtype):
    return _Typed(name, (), {"dtype": dtype, "__doc__": f"PyTorch's legacy ``torch.{name}``: "
                                                        f"a {dtype.name} tensor."})


FloatTensor = _typed("FloatTensor", dtypes.float32)
DoubleTensor = _typed("DoubleTensor", dtypes.float64)
HalfTensor = _typed("HalfTensor", dtypes.float16)
ByteTensor = _typed("ByteTensor", dtypes.uint8)
CharTensor = _typed("CharTensor", dtypes.int8)
ShortTensor = _typed("ShortTensor", dtypes.int16)
IntTensor = _typed("IntTensor", dtypes.int32)
LongTensor = _typed("LongTensor", dtypes.int64)
BoolTensor = _typed("BoolTensor", dtypes.bool_)

@public(top=True, functional=False)
def set_default_tensor_type(t) -> None:
    """PyTorch's older ``set_default_tensor_type``: the default dtype from a legacy type
    (``torch.DoubleTensor``, or its name ``'torch.DoubleTensor'``); a cuda type name
    (``'torch.cuda.FloatTensor'``) makes cuda the default device too."""
    if isinstance(t, str):
        dtype = _BY_TYPE_NAME.get(t.rpartition(".")[2])
    else:
        dtype = getattr(t, "dtype", None) if isinstance(t, _Typed) else None
    if dtype is None:
        raise TypeError(f"set_default_tensor_type: expected a legacy tensor type such as "
                        f"torch.FloatTensor or 'torch.DoubleTensor', got {t!r}; or call "
                        f"set_default_dtype(dtype)")
    dtypes.set_default_dtype(dtype)  # (refuses an integer type, as PyTorch's)
    if isinstance(t, str) and ".cuda." in t:
        set_default_device("cuda")


variable.TENSOR.append(Tensor)  # (torch.autograd.Variable: isinstance asks the tensor class)
