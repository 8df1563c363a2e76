"""NumPy standing in for cupy, held to cupy's own signatures.

The host tests run the CUDA backend's Python with NumPy as ``cp``. NumPy takes
arguments that cupy does not (``np.indices(..., sparse=True)``, ``np.sum(...,
where=...)``), so a plain ``cp = numpy`` passes calls that raise TypeError on a
GPU. ``CupyStandIn`` forwards every attribute to NumPy, but first binds each call
to ``inspect.signature`` of the cupy function of the same name: a keyword or a
positional argument that cupy would refuse fails here as it would there. A name
cupy lacks raises AttributeError. Where inspect cannot read cupy's signature (a
ufunc, a Cython function) the call is forwarded unchecked; so it is when cupy
itself is not importable.

Array methods (``x.sum(...)``, ``x.astype(...)``) are NumPy's and are not checked.
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

try:
    import cupy
    import cupyx
except Exception:  # no cupy here: forward everything unchecked
    cupy = cupyx = None


def _signature(function):
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def checked(numpy_function, cupy_function, name, wrap=None):
    """``numpy_function``, refusing the calls that ``cupy_function`` would refuse."""
    signature = _signature(cupy_function)
    if signature is None and wrap is None:
        return numpy_function

    @functools.wraps(numpy_function)
    def call(*args, **kwargs):
        if signature is not None:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{name}{signature} refuses this call: {exc}") from None
        result = numpy_function(*args, **kwargs)
        return result if wrap is None else wrap(result)

    return call


class CupyStandIn:
    """A module-like object: NumPy's functions, called as cupy's would be.

    ``wrap``, if given, is applied to every function's result (e.g. to view the
    arrays as a class that answers ``.data.ptr`` as cupy's do).
    """

    def __init__(self, wrap=None, numpy_module=np, cupy_module=cupy, prefix=""):
        self._wrap = wrap
        self._numpy = numpy_module
        self._cupy = cupy_module
        self._prefix = prefix

    def __getattr__(self, name):
        obj = getattr(self._numpy, name)
        if self._cupy is None:
            real = None
        elif not hasattr(self._cupy, name):
            raise AttributeError(f"cupy.{self._prefix}{name} does not exist (NumPy has it)")
        else:
            real = getattr(self._cupy, name)
        if isinstance(obj, types.ModuleType):
            return CupyStandIn(self._wrap, obj, real, f"{self._prefix}{name}.")
        if callable(obj) and not isinstance(obj, type):
            return checked(obj, real, f"cupy.{self._prefix}{name}", self._wrap)
        return obj


def add_at(out, coords, values):
    """``np.add.at`` held to ``cupyx.scatter_add``'s signature."""
    real = None if cupyx is None else cupyx.scatter_add
    checked(np.add.at, real, "cupyx.scatter_add")(out, coords, values)
