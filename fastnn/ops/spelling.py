"""PyTorch's and NumPy's spelling of one argument: ``dim=`` or ``axis=``, ``keepdim=`` or
``keepdims=`` (giving both is an error)."""

from __future__ import annotations

from fastnn.api.args import flag

_UNSET = object()


def one_of(op: str, names: tuple, values: tuple, default):
    """The one of two spellings that was given (``_UNSET`` marks a missing one)."""
    given = [(n, v) for n, v in zip(names, values) if v is not _UNSET]
    if len(given) > 1:
        raise TypeError(f"{op}: got both {names[0]}= and {names[1]}= (the same argument in "
                        f"PyTorch's and NumPy's spelling); pass one of them")
    return given[0][1] if given else default


def dim_of(op: str, dim, axis, default=None):
    """The one of dim=/axis= given (or ``default``)."""
    return one_of(op, ("dim", "axis"), (dim, axis), default)


def keep_of(op: str, keepdim, keepdims, default=False) -> bool:
    """The one of keepdim=/keepdims= given, which must be a bool (keepdims="x" is refused)."""
    value = one_of(op, ("keepdim", "keepdims"), (keepdim, keepdims), default)
    return value if type(value) is bool else flag(op, "keepdims", value)


UNSET = _UNSET


def sizes_of(op: str, sizes) -> tuple:
    """Sizes given as varargs (``x.view(2, 3)``) or as one sequence (``x.view((2, 3))``)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int) and sizes[0] is not None:
        try:
            return tuple(sizes[0])
        except TypeError:
            raise TypeError(f"{op}: sizes must be ints or one sequence of ints, got "
                            f"{sizes[0]!r}") from None
    return tuple(sizes)
