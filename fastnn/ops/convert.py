"""Host data (nested lists, numbers, NumPy arrays) to a NumPy array of a fastnn dtype, with
errors that say what in the data is wrong.

NumPy's own conversion accepts things a tensor should not hold, silently: ``None``
becomes NaN, the string ``"1.5"`` becomes 1.5, a complex number loses its imaginary
part, NaN or 2**40 cast to int32 becomes garbage. And where it refuses, its message
("setting an array element with a sequence ... inhomogeneous shape after 1
dimensions") does not say where. :func:`host_array` refuses each of those with the
path of the first bad element.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.api import dtypes as _dtypes

# NumPy's limit on an array's dimensions (NPY_MAXDIMS): 64 since NumPy 2, 32 before
MAX_DIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32
_ACCEPTED = "numbers, bools, nested lists or tuples of them, NumPy arrays or Tensors"


def host_array(owner: str, data, dtype) -> np.ndarray:
    """``data`` as a NumPy array of the fastnn dtype ``dtype`` (no copy where it already is
    one); TypeError for data that holds no numbers, ValueError for ragged data or values
    that do not fit ``dtype``. ``owner`` starts every message (e.g. ``"tensor"``)."""
    target = np.dtype(dtype.numpy)
    if _foreign_bfloat16(data):  # a PyTorch bfloat16 tensor, which NumPy cannot read:
        data = data.float()  # as float32 (exact)
    if isinstance(data, np.ndarray) and _dtypes.holds_numbers(data.dtype):
        return _narrowed(owner, data, target, dtype)
    if isinstance(data, (str, bytes, dict, set, frozenset)) or _is_iterator(data):
        raise TypeError(f"{owner}: data must be {_ACCEPTED}; got a {type(data).__name__}"
                        + ("; pass list(...) of it" if _is_iterator(data) else ""))
    try:
        host = np.asarray(data)
    except ValueError:
        depth = _depth(data)
        if depth > MAX_DIMS:  # NumPy calls it "setting an array element with a sequence"
            raise ValueError(f"{owner}: data is nested {depth} lists deep; a tensor has at "
                             f"most {MAX_DIMS} dimensions: flatten the data, or reshape "
                             "a tensor of fewer dimensions") from None
        raise ValueError(f"{owner}: data is ragged: {_ragged(data)}; every list at one depth "
                         "must have the same length (pad them, or make separate tensors)") from None
    if host.dtype.kind == "O":
        found = _first_non_number(host)
        if found is not None:
            where, bad = found
            raise TypeError(f"{owner}: data holds {type(bad).__name__} {bad!r}{where}; it must "
                            f"be {_ACCEPTED}")
        try:  # numbers NumPy kept as objects: integers beyond int64
            return np.asarray(host.tolist(), dtype=target)
        except (OverflowError, ValueError):
            raise OverflowError(f"{owner}: data holds an integer that {dtype.name} cannot hold "
                             f"(the largest is {_extreme(host)}); use float values") from None
    if host.dtype.kind not in "biuf":
        what = {"U": "strings", "S": "bytes", "c": "complex numbers"}.get(
            host.dtype.kind, f"{host.dtype} values")
        raise TypeError(f"{owner}: data holds {what} ({host.reshape(-1)[:1].tolist()}...); it "
                        f"must be {_ACCEPTED}" + ("; convert them with float()" if
                                                  host.dtype.kind in "US" else ""))
    return _narrowed(owner, host, target, dtype)


def _foreign_bfloat16(data) -> bool:
    """Whether ``data`` is another library's bfloat16 tensor (PyTorch's ``torch.bfloat16``:
    its ``__array__`` refuses the dtype) with a ``float()`` method."""
    return (not isinstance(data, np.ndarray) and hasattr(data, "__array__") and
            str(getattr(data, "dtype", "")).endswith(".bfloat16") and hasattr(data, "float"))


def _is_iterator(data) -> bool:
    return hasattr(data, "__next__")  # a generator: NumPy would wrap it as one object


def _narrowed(owner: str, host: np.ndarray, target: np.dtype, dtype) -> np.ndarray:
    """``host`` cast to ``target``, refusing values an integer target cannot hold (NumPy
    would wrap them or make garbage of NaN)."""
    if target.kind in "iu" and host.dtype.kind in "iuf" and host.size and host.dtype != target:
        info = np.iinfo(target)
        if host.dtype.kind == "f" and not np.isfinite(host).all():
            bad = host[~np.isfinite(host)].reshape(-1)[0].item()
            raise ValueError(f"{owner}: data holds {bad!r}, which {dtype.name} cannot hold; "
                             "use a floating dtype")
        low, high = host.min(), host.max()
        if low < info.min or high > info.max:
            bad = (low if low < info.min else high).item()
            raise OverflowError(f"{owner}: {bad!r} does not fit in {dtype.name} ([{info.min}, "
                             f"{info.max}]); use {_dtypes.wider_hint(dtype)}")
    if dtype.name == "bfloat16" and host.dtype != target and host.dtype != np.float32:
        # NOTE: through float32, as PyTorch converts (double to float to bfloat16): rounded
        # once, a double near a tie can land on the other bfloat16
        host = host.astype(np.float32)
    return host.astype(target, copy=False)


def _first_non_number(host: np.ndarray):
    for index, value in np.ndenumerate(host):
        if not isinstance(value, (numbers.Real, np.bool_)):  # bool is a Real too
            where = f" at [{']['.join(map(str, index))}]" if index else ""
            return where, value
    return None


def _extreme(host: np.ndarray):
    return max((v for v in host.reshape(-1)), key=abs)


def _depth(data) -> int:
    """How many lists deep ``data`` is along its first items (up to 1000: a list may hold
    itself)."""
    depth = 0
    while isinstance(data, (list, tuple)) and depth < 1000:
        depth += 1
        data = data[0] if data else None
    return depth


def _ragged(data) -> str:
    """Where nested lists first disagree in length, e.g. "data[1] has 1 items, data[0] 2"."""
    level = [("data", data)]
    while level:
        sizes = [(path, len(v) if isinstance(v, (list, tuple)) else None) for path, v in level]
        first_path, first = sizes[0]
        for path, size in sizes[1:]:
            if size != first:
                def say(n):
                    return "is not a list" if n is None else f"has {n} items"
                return f"{path} {say(size)}, {first_path} {say(first)}"
        if first is None:
            break
        level = [(f"{path}[{i}]", item) for path, v in level for i, item in enumerate(v)]
    return "nested lists of different lengths"


def inferred_dtype(data):
    """The dtype PyTorch infers for Python data: bools -> bool, ints -> int64, floats -> the
    default float dtype, and a NumPy scalar, NumPy array or Tensor inside a list keeps its
    own dtype; the leaves' dtypes promote as PyTorch's table (``[np.float64(1.5), 2.0]`` is
    float64, ``[np.float16(1), 2]`` float16). host_array then names what cannot be
    converted."""
    if not isinstance(data, (list, tuple)):
        try:
            kind = np.asarray(data).dtype.kind
        except (TypeError, ValueError):
            return _dtypes.get_default_dtype()
        return (_dtypes.bool_ if kind == "b" else _dtypes.int64 if kind in "iu" else
                _dtypes.get_default_dtype())
    found: set = set()
    _leaf_dtypes(data, found, 0)
    result = None
    for dtype in found:
        result = dtype if result is None else _dtypes.promote(result, dtype)
    return result or _dtypes.get_default_dtype()


def _leaf_dtypes(data, found: set, depth: int) -> None:
    """Add to ``found`` the dtype of each leaf of the nested lists ``data`` (a type at a
    time: one pass over a list of plain floats costs one ``set(map(type, ...))``)."""
    if depth > MAX_DIMS:  # a list that holds itself: host_array names the depth
        return
    for kind in set(map(type, data)):
        if issubclass(kind, (list, tuple)):
            for item in data:
                if type(item) is kind:
                    _leaf_dtypes(item, found, depth + 1)
        elif issubclass(kind, (np.ndarray, np.generic)) or hasattr(kind, "dtype"):
            found.update(filter(None, (_leaf_dtype(kind, item) for item in data
                                       if type(item) is kind)))
        else:
            found.add(_leaf_dtype(kind, None) or _dtypes.get_default_dtype())


def _leaf_dtype(kind, item):
    """The dtype of one leaf of type ``kind``; None where it has none of fastnn's (host_array
    then refuses it, or it is a float)."""
    if issubclass(kind, (bool, np.bool_)):
        return _dtypes.bool_
    if issubclass(kind, numbers.Integral) and not issubclass(kind, np.generic):
        return _dtypes.int64
    if item is None or not hasattr(item, "dtype"):
        return None
    try:
        return _dtypes.as_dtype(item.dtype)
    except (TypeError, ValueError, KeyError):
        return None
