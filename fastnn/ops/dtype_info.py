"""What PyTorch answers about dtypes: ``finfo``/``iinfo`` (a dtype's limits),
``result_type``/``promote_types``/``can_cast`` (its promotion rules), and ``is_nonzero``.

The promotion answers are the ones the ops themselves follow (:func:`fastnn.api.dtypes.
promote` and :func:`fastnn.ops.operands.align`): a Python scalar or a 0-d tensor decides
the result's dtype only when it is of a higher category (bool < integer < floating).
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

# bfloat16 has no NumPy dtype: its limits as PyTorch gives them (8 exponent bits, 7 mantissa)
_BFLOAT16 = {"eps": 2.0 ** -7, "max": float.fromhex("0x1.fep127"), "tiny": 2.0 ** -126,
             "resolution": 0.01}


@public(top=True, functional=False)
class finfo:
    """The limits of a floating dtype, as ``torch.finfo``: ``bits``, ``eps`` (the gap after
    1.0), ``max``, ``min`` (= -max), ``tiny`` and ``smallest_normal`` (the smallest positive
    normal number), ``resolution`` (10**-digits) and ``dtype`` (its name). No argument: the
    default float dtype's."""

    def __init__(self, dtype=None):
        dtype = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError(f"finfo: expected a floating dtype, got {dtype.name}; use "
                            "fnn.iinfo for integer dtypes")
        if dtype.name == "bfloat16":
            eps, big, tiny, resolution = (_BFLOAT16[k] for k in ("eps", "max", "tiny",
                                                                 "resolution"))
        else:
            info = np.finfo(dtype.numpy)
            eps, big, tiny = float(info.eps), float(info.max), float(info.smallest_normal)
            resolution = 10.0 ** -info.precision
        self.bits = dtype.itemsize * 8
        self.eps, self.max, self.min = eps, big, -big
        self.tiny = self.smallest_normal = tiny
        self.resolution = resolution
        self.dtype = dtype.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


@public(top=True, functional=False)
class iinfo:
    """The limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``max``, ``min`` and
    ``dtype`` (its name)."""

    def __init__(self, dtype):
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_floating or dtype is dtypes.bool_:
            raise TypeError(f"iinfo: expected an integer dtype, got {dtype.name}; use "
                            "fnn.finfo for floating dtypes")
        self.bits = dtype.itemsize * 8
        self.min, self.max = dtypes.int_range(dtype)
        self.dtype = dtype.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def _scalar_dtype(op: str, value):
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, numbers.Integral):
        return dtypes.int64
    if isinstance(value, numbers.Real):
        return dtypes.get_default_dtype()
    raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(value).__name__}")


def _join(found, dtype):
    return dtype if found is None else dtypes.promote(found, dtype)


@public(top=True, functional=False)
def result_type(tensor1, tensor2):
    """The dtype ``tensor1 + tensor2`` would have (each a Tensor or a Python number).

    Tensors with dims decide first; a 0-d tensor, then a Python scalar, moves the result
    only to a higher category (a Python float makes integers the default float dtype).
    """
    groups = [None, None, None]  # tensors with dims, 0-d tensors, Python scalars
    for operand in (tensor1, tensor2):
        if isinstance(operand, Tensor):
            rank = 0 if operand.ndim else 1
            groups[rank] = _join(groups[rank], operand.dtype)
        else:
            groups[2] = _join(groups[2], _scalar_dtype("result_type", operand))
    result = None
    for dtype in groups:
        if dtype is None:
            continue
        if result is None:
            result = dtype
        elif dtypes.category(dtype) > dtypes.category(result):  # lower priority, higher category
            result = dtype
    return result


@public(top=True, functional=False)
def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing their
    kind, as PyTorch's table (float16 with bfloat16 is float32)."""
    return dtypes.promote(dtypes.as_dtype(type1), dtypes.as_dtype(type2))


@public(top=True, functional=False)
def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` in an op's output: never
    to a lower category (floating to integer, or a number to bool); sizes may shrink."""
    return dtypes.category(dtypes.as_dtype(from_)) <= dtypes.category(dtypes.as_dtype(to))


@public(method=True, top=True, functional=False)
def is_nonzero(x: Tensor) -> bool:
    """Whether the single element of ``x`` is nonzero (``bool(x)``); RuntimeError for a
    tensor of more or fewer than one element."""
    if not isinstance(x, Tensor):
        raise TypeError(f"is_nonzero: expected a fastnn Tensor, got {type(x).__name__}")
    if x.numel() != 1:
        many = "more than one value" if x.numel() else "no values"
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with {many} is ambiguous; "
                           "reduce it first (x.any(), x.all())")
    return bool(x.item() != 0)


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


@public(top=True, functional=False)
def set_float32_matmul_precision(precision: str) -> None:
    """Record PyTorch's float32 matmul precision hint ("highest", "high" or "medium").

    A hint only: fastnn's backends compute float32 products in full float32 whatever it
    says (no TF32 or bfloat16 passes), which every setting allows.
    """
    if precision not in _MATMUL_PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of "
                         f"{', '.join(_MATMUL_PRECISIONS)}, got {precision!r}")
    _matmul_precision[0] = precision


@public(top=True, functional=False)
def get_float32_matmul_precision() -> str:
    """The hint :func:`set_float32_matmul_precision` last recorded ("highest" at start)."""
    return _matmul_precision[0]
