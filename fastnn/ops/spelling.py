"""PyTorch's and NumPy's spelling of one argument: ``dim=`` or ``axis=``, ``keepdim=`` or
``keepdims=`` (giving both is an error); sizes as varargs or one sequence."""

from __future__ import annotations

import numbers
import sys

from fastnn.api.args import flag

_UNSET = object()


def one_of(op: str, names: tuple, values: tuple, default):
    """The one of two spellings that was given (``_UNSET`` marks a missing one)."""
    first, second = values  # (on every call of a reduction or softmax: no list built)
    if second is _UNSET:
        return default if first is _UNSET else first
    if first is not _UNSET:
        raise TypeError(f"{op}: got both {names[0]}= and {names[1]}= (the same argument in "
                        f"PyTorch's and NumPy's spelling); pass one of them")
    return second


def dim_of(op: str, dim, axis, default=None):
    """The one of dim=/axis= given (or ``default``)."""
    return one_of(op, ("dim", "axis"), (dim, axis), default)


def keep_of(op: str, keepdim, keepdims, default=False) -> bool:
    """The one of keepdim=/keepdims= given, which must be a bool (keepdims="x" is refused)."""
    value = one_of(op, ("keepdim", "keepdims"), (keepdim, keepdims), default)
    return value if type(value) is bool else flag(op, "keepdims", value)


UNSET = _UNSET


def sizes_of(op: str, sizes: tuple) -> tuple:
    """Sizes given as varargs (``x.view(2, 3)``) or as one sequence (``x.view((2, 3))``, a
    list, a shape): the one parser of PyTorch's two spellings, for every op that takes
    sizes. The entries are not checked here (see :func:`shape_of`)."""
    if len(sizes) != 1:
        return sizes
    first = sizes[0]
    if type(first) is int or first is None or isinstance(first, numbers.Integral):
        return sizes
    try:
        return tuple(first)
    except TypeError:
        raise TypeError(f"{op}: sizes must be ints or one sequence of ints, got "
                        f"{type(first).__name__} {first!r}") from None


def sizes_by_name(op: str, sizes: tuple, name: str, value) -> tuple:
    """Sizes given as PyTorch's keyword (``x.view(size=(2, 3))``, ``x.reshape(shape=...)``,
    ``x.permute(dims=...)``) instead of varargs: ``value``, unless varargs came too. Called
    only when the keyword was given, so that the varargs spelling pays nothing for it."""
    if sizes:
        raise TypeError(f"{op}: give the sizes as arguments or as {name}=, not both")
    return sizes_of(op, (value,))


def shape_of(op: str, sizes: tuple, size=None) -> tuple:
    """The shape of a new tensor from sizes as varargs or one sequence, or as PyTorch's
    keyword ``size=`` (``torch.zeros(size=(2, 3))``): ints >= 0, with an error that names
    ``op`` (and the keyword a misplaced dtype or device wants)."""
    if size is not None:
        if sizes:
            raise TypeError(f"{op}: give the sizes as arguments or as size=, not both")
        sizes = (size,)
    shape = sizes_of(op, sizes)
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            hint = ("; pass dtype= and device= as keywords" if len(shape) > 1 and
                    not isinstance(n, numbers.Number) else "")
            raise TypeError(f"{op}: sizes must be ints, got {type(n).__name__} {n!r} in "
                            f"{tuple(shape)}{hint}")
        if n < 0:
            raise ValueError(f"{op}: negative dimension in shape {tuple(shape)}; sizes must "
                             "be >= 0")
    shape = tuple(int(n) for n in shape)
    count = 1
    for n in shape:
        count *= n
    if count > sys.maxsize:  # NumPy would say only "Maximum allowed dimension exceeded"
        raise ValueError(f"{op}: shape {shape} has {count} elements; a tensor holds at most "
                         f"{sys.maxsize} (2**63 - 1): use smaller sizes")
    return shape


def shape_arg(op: str, shape) -> tuple:
    """One shape argument (a tuple, a list or an int) as a tuple of ints >= 0."""
    return shape_of(op, (shape,))
