"""PyTorch's ``torch._foreach_*`` functions: one op over a list of tensors, which
optimizers and EMA code (timm's, for one) call on a model's parameters. Each is the
tensor method applied to every element in turn, the second operand taken elementwise from
a list or shared when it is a scalar or a tensor; the ``_`` forms write in place and
return None, as PyTorch's. (One launch per tensor: what they save in PyTorch, a fused
kernel over the list, they do not save here.)"""

from __future__ import annotations

import numbers

from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_min", "clamp_max")
TERNARY = ("addcmul", "addcdiv", "lerp")


def _tensors(op: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: expected a list or tuple of Tensors, got "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: element {i} is a {type(t).__name__}, not a Tensor")
    return list(tensors)


def _each(op: str, value, count: int) -> list:
    """``value`` per element: a list or tuple of ``count`` entries, else shared."""
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"{op}: {count} tensors but {len(value)} operands; give one per "
                             f"tensor, or one scalar for all")
        return list(value)
    if value is not None and not isinstance(value, (Tensor, numbers.Number)):
        raise TypeError(f"{op}: expected a Tensor, a number or a list of them, got "
                        f"{type(value).__name__}")
    return [value] * count


def _apply(t: Tensor, name: str, args: tuple, kwargs: dict, in_place: bool):
    if not in_place:
        return getattr(t, name)(*args, **kwargs)
    method = getattr(t, name + "_", None)
    if method is not None:
        method(*args, **kwargs)
    else:  # (no in-place method of that name: the result written back)
        t.copy_(getattr(t, name)(*args, **kwargs))
    return None


def _register(name: str, in_place: bool, arity: int) -> None:
    op = f"_foreach_{name}" + ("_" if in_place else "")

    def foreach(self, *operands, **kwargs):
        tensors = _tensors(op, self)
        value = None  # addcmul's and addcdiv's scale: a keyword, or a last operand
        if name in ("addcmul", "addcdiv"):
            if len(operands) == arity:
                operands, value = operands[:-1], operands[-1]
            else:
                value = kwargs.pop("value", None)
        if len(operands) != arity - 1:
            raise TypeError(f"{op}: expected {arity - 1} operand(s) after the tensors, got "
                            f"{len(operands)}")
        columns = [_each(op, operand, len(tensors)) for operand in operands]
        values = None if value is None else _each(op, value, len(tensors))
        out = []
        for i, t in enumerate(tensors):
            args = tuple(column[i] for column in columns)
            extra = dict(kwargs) if values is None else {**kwargs, "value": values[i]}
            out.append(_apply(t, name, args, extra, in_place))
        return None if in_place else out

    foreach.__name__ = foreach.__qualname__ = op
    foreach.__doc__ = (f"``torch.{op}``: ``t.{name}{'_' if in_place else ''}(...)`` for each "
                       f"tensor t of the list" + (" (in place)." if in_place else "."))
    public(top=True, functional=False, name=op)(foreach)


for _names, _arity in ((UNARY, 1), (BINARY, 2), (TERNARY, 3)):
    for _name in _names:
        for _in_place in (False, True):
            _register(_name, _in_place, _arity)


@public(top=True, functional=False)
def _foreach_zero_(self) -> None:
    """``torch._foreach_zero_``: every tensor of the list set to zero."""
    for t in _tensors("_foreach_zero_", self):
        t.zero_()


@public(top=True, functional=False)
def _foreach_copy_(self, src, non_blocking: bool = False) -> None:
    """``torch._foreach_copy_``: each tensor of ``self`` takes the values of its
    counterpart in ``src``."""
    tensors = _tensors("_foreach_copy_", self)
    sources = _tensors("_foreach_copy_", src)
    if len(sources) != len(tensors):
        raise ValueError(f"_foreach_copy_: {len(tensors)} tensors but {len(sources)} sources")
    for t, s in zip(tensors, sources):
        t.copy_(s)


@public(top=True, functional=False)
def _foreach_clone(self) -> list:
    """``torch._foreach_clone``: a copy of each tensor."""
    return [t.clone() for t in _tensors("_foreach_clone", self)]


@public(top=True, functional=False)
def _foreach_norm(self, ord=2, dtype=None) -> list:  # noqa: A002
    """``torch._foreach_norm``: the vector norm of each tensor (0-d tensors), computed in
    ``dtype`` when given."""
    tensors = _tensors("_foreach_norm", self)
    return [(t if dtype is None else t.to(dtype)).norm(ord) for t in tensors]


@public(top=True, functional=False)
def _foreach_max(self) -> list:
    """``torch._foreach_max``: the largest element of each tensor (0-d tensors)."""
    return [t.max() for t in _tensors("_foreach_max", self)]
