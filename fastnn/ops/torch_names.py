"""PyTorch's other spellings of existing ops, at the top level (``fnn.divide``,
``fnn.eq``, ``fnn.clamp_min``) and as methods where PyTorch has them.

Each is the op it names under another name, or a line over it: nothing here has a
gradient or a backend hook of its own.
"""

from __future__ import annotations

from fastnn.ops import aliases, mathops
from fastnn.ops import elementwise as ew
from fastnn.ops.dropout import dropout as _dropout
from fastnn.ops.losses_regression import cosine_similarity
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

# the same function under PyTorch's second name (its docstring is the op's own)
public(method=True, top=True, functional=False, name="multiply")(ew.mul)
public(method=True, top=True, functional=False, name="negative")(ew.neg)
public(method=True, top=True, functional=False, name="absolute")(ew.abs)
public(method=True, top=True, functional=False, name="divide")(mathops.div_rounded)
public(method=True, top=True, functional=False, name="subtract")(ew.sub)
public(top=True, functional=False)(aliases.masked_fill)
public(top=True, functional=False)(cosine_similarity)


def _tensor(op: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a fastnn Tensor, got {type(x).__name__}; wrap it "
                        "with fnn.tensor(...)")


@public(method=True, top=True, functional=False)
def eq(x: Tensor, other) -> Tensor:
    """x == other, elementwise (a bool tensor)."""
    _tensor("eq", x)
    return ew.compare("equal", x, other)


@public(method=True, top=True, functional=False, aliases=("not_equal",))
def ne(x: Tensor, other) -> Tensor:
    """x != other, elementwise (a bool tensor; True where either is NaN)."""
    _tensor("ne", x)
    return ew.compare("equal", ew.compare("equal", x, other), 0)


@public(method=True, top=True, functional=False)
def true_divide(x: Tensor, other) -> Tensor:
    """x / other, always a true (floating) division: ``div`` without ``rounding_mode``."""
    return mathops.div_rounded(x, other)


@public(top=True, functional=False)
def rsub(x: Tensor, other, *, alpha=1) -> Tensor:
    """other - alpha * x (``sub`` with its operands swapped)."""
    _tensor("rsub", x)
    return ew.sub(other, x if alpha == 1 else ew.mul(x, alpha))


@public(method=True, top=True, functional=False)
def clamp_min(x: Tensor, min) -> Tensor:  # noqa: A002  (PyTorch's keyword)
    """max(x, min) elementwise (``clamp(x, min=min)``)."""
    return mathops.clamp(x, min, None)


@public(method=True, top=True, functional=False)
def clamp_max(x: Tensor, max) -> Tensor:  # noqa: A002
    """min(x, max) elementwise (``clamp(x, max=max)``)."""
    return mathops.clamp(x, None, max)


@public(top=True, functional=False, name="detach")
def detach(x: Tensor) -> Tensor:
    """``x.detach()``: x's values (shared storage) without its history."""
    _tensor("detach", x)
    return x.detach()


@public(top=True, functional=False, name="dropout")
def dropout_top(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout(input, p, train)``: elements zeroed with probability ``p`` and the
    rest scaled by 1/(1-p) when ``train`` (``functional.dropout``'s positional form)."""
    return _dropout(input, p, train)
