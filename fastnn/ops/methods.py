"""Operators and methods of :class:`~fastnn.ops.tensor.Tensor`: the op table's methods
(:mod:`fastnn.ops.table`) plus the operators, which are spelt differently.

Kept apart from tensor.py so the class stays readable; imported once by
``fastnn/__init__.py``.
"""

from __future__ import annotations

import numbers

import numpy as np

from fastnn.autograd.node_names import show_as
from fastnn.ops import elementwise as m
from fastnn.ops import inplace as _inplace  # noqa: F401  (fills the table's _ methods)
from fastnn.ops import movement, nnops, scattering, viewing  # noqa: F401
from fastnn.ops.operands import arrays_as_tensors
from fastnn.ops.storage import inplace
from fastnn.ops.table import METHODS
from fastnn.ops.tensor import Tensor


def _rsub(self, other):
    return m.add(m.neg(self), other)


def _rdiv(self, other):
    return m.div(other, self)


def _rpow(self, other):
    return m.pow(other, self)


def _rmatmul(self, other):
    return nnops.matmul(other, self)


# what the equality operators compare; anything else (None, a string, a list) gets Python's
# answer by identity, as PyTorch's: ``x == None`` is False, ``x != None`` True
_COMPARABLE = (Tensor, np.ndarray, numbers.Number)


def _eq(self, other):
    if not isinstance(other, _COMPARABLE):
        return NotImplemented
    return m.compare("equal", self, other)


def _ne(self, other):
    if not isinstance(other, _COMPARABLE):
        return NotImplemented
    return m.not_mask(m.compare("equal", self, other))


def _transpose(self, *axes, dim0=None, dim1=None):
    """``x.transpose(0, 1)`` swaps two dims (PyTorch; also ``dim0=``, ``dim1=``);
    ``x.transpose((2, 0, 1))`` or ``x.transpose(2, 0, 1)`` permutes them all; no axes
    reverses them."""
    if dim0 is not None or dim1 is not None:
        axes = axes + tuple(d for d in (dim0, dim1) if d is not None)
        if len(axes) != 2:
            raise TypeError(f"transpose: expected two dims (dim0, dim1), got {axes}")
    if len(axes) == 2 and all(isinstance(a, int) for a in axes):
        return movement.transpose(self, axes[0], axes[1])
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return movement.transpose(self, axes or None)


def _or_equal(strict: str, self, other):
    """a > b or a == b (not ``not a < b``, which is True for NaN)."""
    beyond = m.compare(strict, self, other)
    return m.where(beyond, beyond, m.compare("equal", self, other))


def _ge(self, other):
    return _or_equal("greater", self, other)


def _le(self, other):
    return _or_equal("less", self, other)


_METHODS = {
    "__add__": m.add,
    "__radd__": m.add,
    "__sub__": m.sub,
    "__rsub__": _rsub,
    "__mul__": m.mul,
    "__rmul__": m.mul,
    "__truediv__": m.div,
    "__rtruediv__": _rdiv,
    "__pow__": m.pow,
    "__rpow__": _rpow,
    "__neg__": m.neg,
    "__matmul__": nnops.matmul,
    "__rmatmul__": _rmatmul,
    "__gt__": lambda a, b: m.compare("greater", a, b),
    "__lt__": lambda a, b: m.compare("less", a, b),
    "__ge__": _ge,
    "__le__": _le,
    # elementwise, as in PyTorch; tensors still hash by identity (see below)
    "__eq__": _eq,
    "__ne__": _ne,
    "__abs__": m.abs,
    "transpose": _transpose,
    "astype": m.astype,
}


def _arrays_taken(fn):
    """``fn(self, other)`` with a NumPy array ``other`` taken as a tensor on self's device,
    for the operators whose ops do not meet their operands in :mod:`fastnn.ops.operands`
    (``elementwise.binary`` and ``compare`` take arrays themselves)."""
    def method(self, other):
        if type(other) is np.ndarray:
            self, other = arrays_as_tensors(self, other)
        return fn(self, other)

    method.__name__ = method.__qualname__ = fn.__name__
    return method


def _augmented(name: str, fn):
    """``x <op>= y``: the operator's result written into x (PyTorch's in-place semantics:
    ``y = x; x += 1`` changes y too)."""

    def method(self, other):
        return inplace(name, self, fn, other)

    method.__name__ = method.__qualname__ = name
    return method


_ALL = {**METHODS, **_METHODS}
for _op in ("floordiv", "mod", "and", "or", "xor", "lshift", "rshift"):
    for _name in (f"__{_op}__", f"__r{_op}__"):
        _ALL[_name] = _arrays_taken(_ALL[_name])
for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor"):
    _ALL[f"__i{_op}__"] = _augmented(f"__i{_op}__", _ALL[f"__{_op}__"])

for _name, _fn in _ALL.items():
    setattr(Tensor, _name, _fn)

Tensor.T = property(lambda self: show_as(movement.transpose(self), "PermuteBackward0", (self,)))
Tensor.__hash__ = object.__hash__
