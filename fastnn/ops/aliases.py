"""PyTorch's method spellings that are other ops under another name: dtype shortcuts
(``x.long()``), ``*_as``, ``new_*``, comparisons as methods, logical ops, masked_fill."""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.autograd.node_names import show_as, shows
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, movement, shaping
from fastnn.ops.movement import view_op
from fastnn.ops.operands import fill_value
from fastnn.ops.spelling import shape_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor


@public(method=True, functional=False)
def long(x: Tensor) -> Tensor:
    """x as int64."""
    return x.to(dtypes.int64)


@public(method="int", functional=False)
def int_(x: Tensor) -> Tensor:
    """x as int32."""
    return x.to(dtypes.int32)


@public(method="bool", functional=False)
def bool_(x: Tensor) -> Tensor:
    """x as bool."""
    return x.to(dtypes.bool_)


@public(method=True, functional=False)
def byte(x: Tensor) -> Tensor:
    """x as uint8 (floats truncate toward zero)."""
    return x.to(dtypes.uint8)


@public(method=True, functional=False)
def char(x: Tensor) -> Tensor:
    """x as int8 (floats truncate toward zero)."""
    return x.to(dtypes.int8)


@public(method=True, functional=False)
def short(x: Tensor) -> Tensor:
    """x as int16 (floats truncate toward zero)."""
    return x.to(dtypes.int16)


@public(method=True, functional=False)
def half(x: Tensor) -> Tensor:
    """x as float16."""
    return x.to(dtypes.float16)


@public(method=True, functional=False)
def type_as(x: Tensor, other: Tensor) -> Tensor:
    """x converted to other's dtype."""
    return x.to(other.dtype)


@view_op(method=True, functional=False)
def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """x broadcast to other's shape (a view)."""
    return movement.broadcast_to(x, other.shape)


@view_op(method=True, functional=False)
def view_as(x: Tensor, other: Tensor) -> Tensor:
    """x reshaped to other's shape."""
    return movement.reshape(x, other.shape)


def _new(op: str, x: Tensor, sizes: tuple, value, dtype, device, requires_grad,
         size=None) -> Tensor:
    return full(shape_of(op, sizes, size), value, dtype or x.dtype, device or x.device,
                requires_grad)


@public(method=True, functional=False)
def new_zeros(x: Tensor, *sizes, dtype=None, device=None, requires_grad=False,
              size=None) -> Tensor:
    """Zeros sized by varargs, one tuple or ``size=`` (``x.new_zeros(2, 3)``), with x's
    dtype and device unless given."""
    return _new("new_zeros", x, sizes, 0, dtype, device, requires_grad, size)


@public(method=True, functional=False)
def new_ones(x: Tensor, *sizes, dtype=None, device=None, requires_grad=False,
             size=None) -> Tensor:
    """Ones sized as :func:`new_zeros`, with x's dtype and device unless given."""
    return _new("new_ones", x, sizes, 1, dtype, device, requires_grad, size)


@public(method=True, functional=False)
def new_empty(x: Tensor, *sizes, dtype=None, device=None, requires_grad=False,
              size=None) -> Tensor:
    """A new tensor sized as :func:`new_zeros` (zeros: no uninitialised memory)."""
    return _new("new_empty", x, sizes, 0, dtype, device, requires_grad, size)


@public(method=True, functional=False)
def new_full(x: Tensor, size, fill_value, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``fill_value`` in a new tensor of ``size`` (one tuple, as PyTorch's), with x's dtype
    and device unless given."""
    return _new("new_full", x, (size,), fill_value, dtype, device, requires_grad)


@public(method=True, functional=False)
def new_tensor(x: Tensor, data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of ``data`` as a tensor with x's dtype and device unless given."""
    return tensor(data, dtype=dtype or x.dtype, device=device or x.device,
                  requires_grad=requires_grad)


@public(method=True, functional=False)
def dim(x: Tensor) -> int:
    """The number of dims (``x.ndim``)."""
    return x.ndim


@public(method=True, functional=False)
def nelement(x: Tensor) -> int:
    """The number of elements (``x.numel()``)."""
    return x.numel()


@public(top=True, functional=False)
def numel(x: Tensor) -> int:
    """The number of elements of a tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"numel: expected a fastnn Tensor, got {type(x).__name__}")
    return x.numel()


@public(top=True, functional=False)
def is_tensor(obj) -> bool:
    """Whether ``obj`` is a fastnn Tensor."""
    return isinstance(obj, Tensor)


@public(method=True, top=True, functional=False)
def is_floating_point(x: Tensor) -> bool:
    """Whether x's dtype is a floating-point one."""
    return x.dtype.is_floating


@public(method=True, functional=False)
def element_size(x: Tensor) -> int:
    """The size of one element in bytes (4 for float32)."""
    return x.dtype.itemsize


# PyTorch's legacy tensor type names, one per dtype (x.type() and x.type("...Tensor"))
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "uint8": "ByteTensor", "int8": "CharTensor",
               "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor",
               "bool": "BoolTensor"}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


@public(method="type", functional=False)
def type_(x: Tensor, dtype=None):
    """No argument: x's type name as PyTorch's ``x.type()`` gives it, with fastnn for torch
    (``'fastnn.FloatTensor'``, ``'fastnn.cuda.FloatTensor'`` off the cpu); with a dtype (or
    such a name, or a legacy class: ``x.type(torch.LongTensor)``): x converted to it."""
    if dtype is None:
        where = "" if x.device.type == "cpu" else f"{x.device.type}."
        return f"fastnn.{where}{_TYPE_NAMES[x.dtype.name]}"
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        found = _BY_TYPE_NAME.get(dtype.rpartition(".")[2])
        if found is None:
            raise TypeError(f"type: unknown tensor type {dtype!r}; expected a dtype or one of "
                            f"{', '.join(sorted(_BY_TYPE_NAME))}")
        dtype = found
    elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), dtypes.DType):
        dtype = dtype.dtype  # x.type(torch.LongTensor): the legacy class's dtype
    return x.to(dtypes.as_dtype(dtype))


@public(method=True, top=True, functional=False, aliases=("greater",))
def gt(x, other):
    """x > other."""
    return x > other


@public(method=True, top=True, functional=False, aliases=("less",))
def lt(x, other):
    """x < other."""
    return x < other


@public(method=True, top=True, functional=False, aliases=("greater_equal",))
def ge(x, other):
    """x >= other."""
    return x >= other


@public(method=True, top=True, functional=False, aliases=("less_equal",))
def le(x, other):
    """x <= other."""
    return x <= other


@public(method="where", functional=False)
def where_method(x: Tensor, condition: Tensor, other) -> Tensor:
    """``x.where(condition, other)``: x where condition, else other (PyTorch's method)."""
    return ew.where(condition, x, other)


@public(method=True, functional=False)
@shows("MaskedFillBackward0")
def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` (bool, broadcast to x) is True, else x; x's dtype, as
    PyTorch: the value (a number or a 0-d tensor) is converted to it (2.5 fills an int64
    x with 2, 5 fills a bool x with True)."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise TypeError("masked_fill: mask must be a bool tensor (e.g. x > 0)")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill: only a 0-d value tensor is supported (as "
                               f"PyTorch), got shape {value.shape}; use torch.where(mask, "
                               "value, x) to fill from a tensor")
    value = fill_value("masked_fill", value, x)
    if isinstance(value, Tensor):
        return ew.where(mask, value, x)
    return ew.where(ew.not_mask(mask), x, value)  # a float for a floating x: -inf, 0.0


def _as_bool(x: Tensor) -> Tensor:
    return x if x.dtype is dtypes.bool_ else ew.nonzero_mask(x)


@public(method=True, top=True)
def logical_not(x: Tensor) -> Tensor:
    """True where x is zero (False)."""
    return ew.not_mask(_as_bool(x))


@public(method=True, top=True)
def logical_and(x: Tensor, other: Tensor) -> Tensor:
    """True where both are nonzero."""
    return mathops.bitwise_and(_as_bool(x), _as_bool(other))


@public(method=True, top=True)
def logical_or(x: Tensor, other: Tensor) -> Tensor:
    """True where either is nonzero."""
    return mathops.bitwise_or(_as_bool(x), _as_bool(other))


@public(method=True, top=True)
def logical_xor(x: Tensor, other: Tensor) -> Tensor:
    """True where exactly one is nonzero."""
    return mathops.bitwise_xor(_as_bool(x), _as_bool(other))


@public(method=True, top=True)
def t(x: Tensor) -> Tensor:
    """The transpose of a matrix (of a 0-d or 1-d tensor, a view of it as it is; as
    PyTorch, never x itself)."""
    if x.ndim > 2:
        raise ValueError(f"t: expects a tensor of at most 2 dims, got {x.ndim}; use "
                         "x.transpose(d0, d1)")
    out = movement.same_view(x) if x.ndim < 2 else shaping.swap(x, 0, 1)
    return show_as(out, "TBackward0", (x,))


@public(method="__iter__", functional=False)
def iterate(x: Tensor):
    """``for row in x``: the sub-tensors along dim 0 (gradients flow to x)."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d tensor; use x.item() for its value")
    return (x[i] for i in range(x.shape[0]))


@public(method="__contains__", functional=False)
def contains(x: Tensor, element) -> bool:
    """``element in x``: whether any element of x equals ``element`` (a number or a tensor
    broadcast against x), as PyTorch's; Python's fallback iterated rows and compared them
    whole, which raised for any x of more than one dim."""
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                           f"passed in a {type(element)}.")
    return bool((x == element).any())
