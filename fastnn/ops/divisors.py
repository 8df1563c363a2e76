"""PyTorch's ``gcd`` and ``lcm`` of integer tensors, elementwise with broadcasting, and
``unravel_index`` (flat indices to coordinates by floor division).

gcd by Euclid's algorithm on |a| and |b| (``gcd(0, 0) = 0``, results >= 0);
``lcm(a, b) = |a / gcd(a, b) * b|``, 0 when either is 0. The loop runs until every
remainder is 0 (at most ~92 rounds for int64), so it reads one flag per round back
from the device.
"""

from __future__ import annotations

from fastnn.ops import elementwise as ew
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _integers(op: str, a, b) -> None:
    for name, value in (("input", a), ("other", b)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")
        if value.dtype.is_floating or value.dtype.name == "bool":
            raise NotImplementedError(f"{op}: not implemented for {value.dtype.name} "
                                      "(integer tensors only)")


@public(method=True, top=True)
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of ``input`` and ``other`` elementwise (>= 0)."""
    _integers("gcd", input, other)
    a, b = ew.abs(input), ew.abs(other)
    a, b = ew.add(a, ew.mul(b, 0)), ew.add(b, ew.mul(a, 0))  # broadcast and promote both
    while bool((b != 0).any()):
        nonzero = b != 0
        remainder = a % ew.where(nonzero, b, 1)
        a, b = ew.where(nonzero, b, a), ew.where(nonzero, remainder, 0)
    return a


@public(method=True, top=True)
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of ``input`` and ``other`` elementwise (>= 0; 0 when
    either is 0)."""
    divisor = gcd(input, other)
    zero = divisor == 0
    quotient = input // ew.where(zero, 1, divisor)  # exact: divisor | input
    return ew.where(zero, 0, ew.abs(ew.mul(quotient, other)))


@public(top=True, functional=False)
def unravel_index(indices, shape) -> tuple:
    """The coordinates in ``shape`` of each flat (C-order) index, as PyTorch's: a tuple of
    int64 tensors shaped as ``indices``; a negative index counts from the end, and one out
    of range wraps around (PyTorch's does too: no error, no host read)."""
    from fastnn.api.args import ints
    from fastnn.ops.tensor import tensor

    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.dtype.is_floating or indices.dtype.name == "bool":
        raise TypeError(f"unravel_index: expected 'indices' to be an integer tensor, but got "
                        f"{indices.dtype.name}")
    shape = ints("unravel_index", "shape", (shape,) if isinstance(shape, int) else shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"unravel_index: 'shape' cannot have negative values, got {shape}")
    rest = indices.to("int64")
    coords = []
    for n in reversed(shape):
        coords.append(rest % n)  # (floor division: -1 is the last element)
        rest = rest // n
    return tuple(reversed(coords))
