"""Dtypes: small named objects that compare equal to their NumPy counterparts."""

from __future__ import annotations

import importlib.util

import numpy as np


class DType:
    """A tensor element type. ``name`` is what backends receive."""

    __slots__ = ("name", "is_floating", "itemsize")

    def __init__(self, name: str, is_floating: bool, itemsize: int):
        self.name = name
        self.is_floating = is_floating
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return f"fastnn.{self.name}"

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self is other
        try:
            return as_dtype(other) is self
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        """Pickle and deepcopy as the name: dtypes compare by identity, so a copy must be
        the one canonical object."""
        return as_dtype, (self.name,)

    @property
    def is_floating_point(self) -> bool:
        """PyTorch's name for :attr:`is_floating`."""
        return self.is_floating

    @property
    def is_signed(self) -> bool:
        """Whether the type holds negative values (all but bool and uint8), as PyTorch's."""
        return self.name not in ("bool", "uint8")

    @property
    def is_integer(self) -> bool:
        """Whether this is one of the integer dtypes (bool is not one)."""
        return not self.is_floating and self.name != "bool"

    @property
    def is_complex(self) -> bool:
        """False: fastnn has no complex dtypes (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype used on the host: bfloat16's is ml_dtypes' where that package is
        installed (NumPy has none; without it, float32)."""
        if self.name == "bfloat16":
            return numpy_bfloat16() or np.dtype("float32")
        return np.dtype(self.name)


_ML_DTYPES: list = []  # [ml_dtypes' bfloat16 dtype, or None], filled on first use


def numpy_bfloat16() -> np.dtype | None:
    """ml_dtypes' NumPy bfloat16 dtype, or None where ml_dtypes is not installed.

    Imported on first use, not with fastnn: ml_dtypes 0.7 takes ~1 s of CPU to import,
    which a script that never asks for bfloat16 should not pay. Importing it also teaches
    NumPy the name: ``np.dtype("bfloat16")`` works from then on.
    """
    if not _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            _ML_DTYPES.append(None)
        else:
            _ML_DTYPES.append(np.dtype(ml_dtypes.bfloat16))
    return _ML_DTYPES[0]


def holds_numbers(np_dtype) -> bool:
    """Whether NumPy dtype ``np_dtype`` holds numbers fastnn takes: bool, integers,
    floats, and ml_dtypes' bfloat16 (whose NumPy kind is "V")."""
    return np_dtype.kind in "biuf" or np_dtype.name == "bfloat16"


def floating_kind(np_dtype) -> bool:
    """Whether NumPy dtype ``np_dtype`` is a floating one, ml_dtypes' bfloat16 included
    (``kind == "f"`` misses it: its kind is "V")."""
    return np_dtype.kind == "f" or np_dtype.name == "bfloat16"


def has_numpy_bfloat16() -> bool:
    """Whether ml_dtypes (NumPy's bfloat16) is installed, without importing it."""
    if _ML_DTYPES:
        return _ML_DTYPES[0] is not None
    return importlib.util.find_spec("ml_dtypes") is not None


float16 = DType("float16", True, 2)
"""IEEE 754 half precision (16 bits), where a backend lists it."""
bfloat16 = DType("bfloat16", True, 2)
"""bfloat16 (8 exponent bits, 7 mantissa bits), where a backend lists it; on the host an
ml_dtypes bfloat16 array (see :func:`numpy_bfloat16`)."""
float32 = DType("float32", True, 4)
"""IEEE 754 single precision, the default float dtype, on every backend."""
float64 = DType("float64", True, 8)
"""IEEE 754 double precision (a device that lacks it refuses it with a clear error)."""
uint8 = DType("uint8", False, 1)
"""8-bit unsigned integers, what images are stored as (never carry gradients)."""
int8 = DType("int8", False, 1)
"""8-bit signed integers (never carry gradients)."""
int16 = DType("int16", False, 2)
"""16-bit signed integers (never carry gradients)."""
int32 = DType("int32", False, 4)
"""32-bit signed integers (never carry gradients)."""
int64 = DType("int64", False, 8)
"""64-bit signed integers, what Python ints become (never carry gradients)."""
bool_ = DType("bool", False, 1)
"""Booleans, the result of comparisons (never carry gradients)."""

_BY_NAME = {d.name: d for d in (float16, bfloat16, float32, float64, uint8, int8, int16, int32,
                                 int64, bool_)}
#: the signed integer dtype of each size: where uint8 meets a signed type (promote)
_SIGNED = {d.itemsize: d for d in _BY_NAME.values() if d.is_integer and d.is_signed}
_FLOAT_ORDER = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}


def names() -> list[str]:
    """The names of fastnn's dtypes."""
    return list(_BY_NAME)


def integer_names() -> list[str]:
    """The names of fastnn's integer dtypes (bool is not one), narrowest first."""
    return [name for name, d in _BY_NAME.items() if d.is_integer]


#: the integer dtypes narrower than int32: a float cast to one goes through int32 on every
#: backend (C leaves a float outside their range undefined; NumPy's cast on x86 goes so,
#: 300.0 -> uint8 44, where CUDA's saturates and PoCL gave 0)
NARROW_INTEGERS = frozenset(name for name in integer_names() if np.dtype(name).itemsize < 4)


def as_dtype(value) -> DType:
    """Turn a DType, a name, or a NumPy dtype/type into a DType; TypeError if unsupported."""
    if isinstance(value, DType):
        return value
    name = value if isinstance(value, str) else None
    if name is None:
        try:
            name = np.dtype(value).name
        except TypeError:
            name = repr(value)
    found = _BY_NAME.get(name)
    if found is None:
        if isinstance(value, int) and not isinstance(value, bool):
            raise TypeError(
                f"unsupported dtype {value!r}: an int where a dtype goes; give the sizes "
                f"first and the dtype as a keyword, e.g. fnn.full((2, 3), 1.0, dtype=...)"
            )
        raise TypeError(
            f"unsupported dtype {name!r}; fastnn supports {', '.join(_BY_NAME)} "
            "(convert the data first, e.g. array.astype('float32'))"
        )
    return found


def is_dtype(value) -> bool:
    """Whether ``value`` names one of fastnn's dtypes (a DType, a name, a NumPy dtype)."""
    try:
        as_dtype(value)
    except TypeError:
        return False
    return True


_default_float = [float32]  # what tensor(), zeros(), randn() ... make floats as


def get_default_dtype() -> DType:
    """The dtype new floating-point tensors get when none is given (float32 at start-up)."""
    return _default_float[0]


def set_default_dtype(dtype) -> None:
    """Make ``dtype`` (a floating dtype) the default for new floating-point tensors, as
    PyTorch's: ``tensor(1.5)``, ``zeros(2)``, ``randn(3)``, ``arange(0.5, 2)`` and the like,
    and the parameters of layers built without ``dtype=``. Process-wide."""
    dtype = as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"set_default_dtype: only floating dtypes can be the default, got "
                        f"{dtype.name}; use fnn.float32 or fnn.float64")
    _default_float[0] = dtype


def category(dtype: DType) -> int:
    """PyTorch's promotion category: 0 bool, 1 integer, 2 floating."""
    return 2 if dtype.is_floating else int(dtype.is_integer)


def promote(a: DType, b: DType) -> DType:
    """The result dtype of a binary op, as PyTorch's table: the higher category wins; two
    floats, the wider (float16 with bfloat16 is float32); two integers, the wider, except
    that uint8 with a signed type is the signed type of at least 16 bits (uint8 + int8 is
    int16): no linear order gives both."""
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if _FLOAT_ORDER[a.name] >= _FLOAT_ORDER[b.name] else b
    if a.is_signed == b.is_signed:  # (only uint8 is unsigned)
        return a if a.itemsize >= b.itemsize else b
    return _SIGNED[max(a.itemsize, b.itemsize, 2)]


def check_fits(op: str, value: int, dtype: DType, what: str = "the Python integer") -> None:
    """OverflowError naming ``op`` unless the integer ``value`` fits in integer ``dtype``.

    NumPy raised its own message on one backend and an OpenCL backend a bare
    ``std::bad_cast``; every backend now gets this one, before any hook runs.
    """
    if dtype.is_floating or dtype is bool_:
        return
    low, high = int_range(dtype)
    if not low <= value <= high:
        raise OverflowError(
            f"{op}: {what} {value} does not fit in {dtype.name} (range [{low}, {high}]); "
            f"use {wider_hint(dtype)}")


def wider_hint(dtype: DType) -> str:
    """What to use instead of an integer dtype a value does not fit in."""
    return "a floating dtype" if dtype is int64 else "dtype=fnn.int64 or a floating dtype"


def int_range(dtype: DType) -> tuple[int, int]:
    """(smallest, largest) value of an integer dtype (bool as 0, 1)."""
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def float_or_default(dtype) -> DType:
    """``dtype`` as a DType, or the default float dtype for None."""
    return get_default_dtype() if dtype is None else as_dtype(dtype)


def floating_dtype(op: str, dtype) -> DType:
    """``dtype`` (None: the default float dtype), TypeError unless it is floating point."""
    dtype = float_or_default(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{op}: dtype must be floating point, got {dtype.name}")
    return dtype
