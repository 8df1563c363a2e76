"""Checks of integer and real arguments, shared by tensors, shape ops, layers, optimizers
and schedules.

Each raises an error that names the function or layer and the argument, so
that 3.7 is not silently truncated to 3, True is not taken for 1, and -1 or
"0.1" does not end in NumPy's or Python's own error further down.
"""

from __future__ import annotations

import numbers

import numpy as np


def integer(owner: str, name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or ValueError naming ``owner`` and ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def ints(owner: str, what: str, values) -> tuple:
    """An int or a sequence of ints as a tuple of ints; TypeError for anything else."""
    kind = type(values)
    if kind is tuple or kind is list:  # the common case, without the ABC checks (~1 us)
        for v in values:
            if type(v) is not int:
                break
        else:
            return tuple(values)
    elif kind is int:
        return (values,)
    if isinstance(values, numbers.Integral):
        values = (values,)
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(
            f"{owner}: {what} must be an int or a sequence of ints, got {values!r}"
        ) from None
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(
                f"{owner}: {what} must be ints, got {type(v).__name__} {v!r} in {values}"
            )
    return tuple(int(v) for v in values)


def real(owner: str, name: str, value) -> float:
    """``value`` as a float when it is a real number (not a bool or a string); else TypeError
    naming ``owner`` and ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {name} must be a real number, got {type(value).__name__} {value!r}"
        )
    return float(value)


def as_given(checked: float, value):
    """``value`` itself when it is a Python int, else ``checked`` (its checked float): a
    layer keeps a hyperparameter as PyTorch's does, as given, so that its repr reads as
    PyTorch's (``Softplus(beta=2)``, not ``beta=2.0``). The functional ops take floats of
    it again, so nothing below the layer sees an int."""
    return value if type(value) is int else checked


def flag(owner: str, name: str, value) -> bool:
    """``value`` when it is a bool (Python's or NumPy's); else TypeError naming ``owner`` and
    ``name``, so that ``bias="no"`` is not taken as true."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{owner}: {name} must be True or False, got {type(value).__name__} {value!r}")


def nonnegative(owner: str, name: str, value, zero: bool = True) -> float:
    """``value`` as a finite float >= 0 (> 0 unless ``zero``), for epsilons, temperatures and
    the like: TypeError for a non-number, ValueError for one out of range or NaN."""
    value = real(owner, name, value)
    if not (value >= 0.0 if zero else value > 0.0) or value == float("inf"):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{owner}: {name} must be {bound} and finite, got {value!r}")
    return value
