"""Small real data sets for examples and tests, loaded as NumPy arrays.

``load(name)`` returns a :class:`Dataset`: float32 inputs, int64 class labels
in ``0 .. num_classes - 1``, a fixed train/held-out split, and inputs
standardised with statistics of the training part only (so nothing about the
held-out part leaks into training).
"""

from __future__ import annotations

from fastnn.data.base import Dataset, MissingDataError
from fastnn.data.digits import load_digits
from fastnn.data.trace import load_trace

LOADERS = {"digits": load_digits, "trace": load_trace}
"""Data-set name -> loader function, the names that :func:`load` accepts."""


def load(name: str, **kwargs) -> Dataset:
    """The data set called ``name`` (one of ``LOADERS``)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        raise ValueError(
            f"unknown data set {name!r}; choose one of {', '.join(sorted(LOADERS))}"
        ) from None
    return loader(**kwargs)


__all__ = ["Dataset", "LOADERS", "MissingDataError", "load", "load_digits", "load_trace"]
