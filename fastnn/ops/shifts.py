"""Integer bit shifts as PyTorch's: ``bitwise_left_shift`` (``<<``) and
``bitwise_right_shift`` (``>>``, arithmetic), composed from multiplications and floor
divisions by powers of two (every backend has those), with PyTorch's results for shifts
outside [0, bits) and its promotion of bool and Python int operands."""

from __future__ import annotations

import builtins

from fastnn.api import dtypes
from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, operands
from fastnn.ops.core import astype
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full


def _shift_operands(op: str, a, b):
    for v in (a, b):
        if isinstance(v, Tensor) and v._dtype.is_floating:
            raise TypeError(f"{op}: defined on integer tensors, not {v._dtype.name}")
        if isinstance(v, float):
            raise TypeError(f"{op}: defined on integers, not the float {v!r}")
    if not isinstance(a, Tensor):
        a = full((), int(a), b._dtype if b._dtype is not dtypes.bool_ else dtypes.int64,
                 b._device)
    if a._dtype is dtypes.bool_:
        a = astype(a, mathops.bool_partner(b))
    if isinstance(b, Tensor):
        b = astype(b, mathops.bool_partner(a)) if b._dtype is dtypes.bool_ else b
        a, b = operands.align(op, a, b)
    else:  # a shift beyond the bits is one beyond them (uint8 holds no -1: bits too)
        shift = builtins.min(int(b), _bits(a))
        if shift < 0:
            shift = -1 if a._dtype.is_signed else _bits(a)
        b = full((), shift, a._dtype, a._device)
    return a, b


def _bits(x: Tensor) -> int:
    return 8 * x._dtype.itemsize


def _power_of_two(n: Tensor) -> Tensor:
    """2**n for 0 <= n < 31 elementwise, as an integer tensor of n's dtype."""
    return ew.pow(full((), 2, n._dtype, n._device), n)


@public(method=("bitwise_left_shift", "__lshift__"), top=True)
def bitwise_left_shift(input, other):
    """input << other: input * 2**other wrapped into the dtype; shifts outside [0, bits)
    give 0, as PyTorch."""
    a, n = _shift_operands("bitwise_left_shift", input, other)
    bits = _bits(a)
    nonnegative = mathops.bitwise_not(ew.compare("less", n, 0))
    inside = mathops.bitwise_and(nonnegative, ew.compare("less", n, bits))
    m = ew.where(inside, n, 0)
    half = mathops.floor_div(m, 2)
    # two multiplications by powers of two below 2**31 (each fits the dtype); the wrap of
    # the product is the shift's
    shifted = ew.mul(ew.mul(a, _power_of_two(half)), _power_of_two(ew.sub(m, half)))
    return ew.where(inside, shifted, 0)


@public(method=("bitwise_right_shift", "__rshift__"), top=True)
def bitwise_right_shift(input, other):
    """input >> other, arithmetic (the sign fills in): floor(input / 2**other); shifts
    outside [0, bits) give -1 for negative input, else 0, as PyTorch."""
    a, n = _shift_operands("bitwise_right_shift", input, other)
    # (a signed shift by bits - 1 leaves only the sign: the fill; uint8's keeps the top bit)
    bits = _bits(a) - int(a._dtype.is_signed)
    nonnegative = mathops.bitwise_not(ew.compare("less", n, 0))
    inside = mathops.bitwise_and(nonnegative, ew.compare("less", n, bits))
    m = ew.where(inside, n, 0)
    half = mathops.floor_div(m, 2)
    shifted = mathops.floor_div(mathops.floor_div(a, _power_of_two(half)),
                                _power_of_two(ew.sub(m, half)))
    zero = full((), 0, a._dtype, a._device)
    fill = ew.where(ew.compare("less", a, 0), -1, zero) if a._dtype.is_signed else zero
    return ew.where(inside, shifted, fill)


@public(method="__rlshift__", functional=False)
def _rlshift(a, b):
    return bitwise_left_shift(b, a)


@public(method="__rrshift__", functional=False)
def _rrshift(a, b):
    return bitwise_right_shift(b, a)
