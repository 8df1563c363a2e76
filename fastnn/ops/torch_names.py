"""PyTorch's other spellings of existing ops, at the top level (``fnn.divide``,
``fnn.eq``, ``fnn.clamp_min``) and as methods where PyTorch has them.

Each is the op it names under another name, or a line over it: nothing here has a
gradient or a backend hook of its own.
"""

from __future__ import annotations

from fastnn.ops import aliases, mathops, movement, nnops, printing, reduction, shaping
from fastnn.ops import elementwise as ew
from fastnn.ops.core import broadcast_shape
from fastnn.ops.dropout import dropout as _dropout
from fastnn.ops.losses_regression import cosine_similarity
from fastnn.ops.table import FUNCTIONAL, TOP, public
from fastnn.ops.tensor import Tensor, tensor

# the same function under PyTorch's second name (its docstring is the op's own)
public(method=True, top=True, functional=False, name="multiply")(ew.mul)
public(method=True, top=True, functional=False, name="negative")(ew.neg)
public(method=True, top=True, functional=False, name="absolute")(ew.abs)
public(method=True, top=True, functional=False, name="divide")(mathops.div_rounded)
public(method=True, top=True, functional=False, name="subtract")(ew.sub)
public(top=True, functional=False)(aliases.masked_fill)
public(top=True, functional=False)(cosine_similarity)
for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d",
              "pixel_shuffle", "pixel_unshuffle", "max_pool1d", "max_pool2d", "avg_pool1d",
              "pairwise_distance", "bilinear", "channel_shuffle", "rms_norm"):
    # torch.<name> is functional.<name>, with the same positional arguments
    TOP.setdefault(_name, FUNCTIONAL[_name])


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
    return ew.not_mask(ew.compare("equal", x, other))


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


@public(top=True, functional=False)
def broadcast_shapes(*shapes) -> tuple:
    """The shape tensors of ``shapes`` would broadcast to (ints count as 1-d shapes);
    RuntimeError naming both when two do not broadcast."""
    out = ()
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        try:
            out = broadcast_shape("broadcast_shapes", out, shape)
        except ValueError as exc:
            raise RuntimeError(str(exc)) from None
    return out


@public(method=True, top=True, functional=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False) -> Tensor:
    """True where an element of ``elements`` is among ``test_elements`` (each a tensor or
    a number); ``invert`` gives the opposite. ``assume_unique`` is accepted for PyTorch's
    signature (the answer does not depend on it)."""
    if not isinstance(elements, Tensor):
        if not isinstance(test_elements, Tensor):
            raise TypeError("isin: expected a Tensor for elements or test_elements")
        elements = tensor(elements, device=test_elements.device)
    tests = test_elements if isinstance(test_elements, Tensor) else tensor(
        test_elements, device=elements.device)
    flat = movement.reshape(tests, (1,) * elements.ndim + (-1,))
    found = reduction.any(ew.compare("equal", shaping.unsqueeze(elements, -1), flat), -1)
    return ew.not_mask(found) if invert else found


@public(method=True, top=True, functional=False)
def inner(x: Tensor, other: Tensor) -> Tensor:
    """The sum over the last dim of x times other (a 0-d operand scales the other):
    shape x.shape[:-1] + other.shape[:-1]."""
    _tensor("inner", x)
    _tensor("inner", other)
    if x.ndim == 0 or other.ndim == 0:
        return ew.mul(x, other)
    if x.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner: the last dims must match, got shapes {x.shape} and "
                           f"{other.shape}")
    k = x.shape[-1]
    flat = nnops.matmul(movement.reshape(x, (-1, k)),
                        movement.transpose(movement.reshape(other, (-1, k)), 0, 1))
    return movement.reshape(flat, x.shape[:-1] + other.shape[:-1])


@public(method=True, top=True, functional=False)
def heaviside(x: Tensor, values) -> Tensor:
    """0 where x < 0, ``values`` where x == 0, 1 where x > 0 (in x's dtype)."""
    _tensor("heaviside", x)
    step = ew.compare("greater", x, 0).to(x.dtype)
    return ew.where(ew.compare("equal", x, 0), values, step)


def _in_place(name: str):
    """``F.<name>_(x, ...)``: ``F.<name>(x, ..., inplace=True)`` (x written, x returned)."""
    op = FUNCTIONAL[name]

    def fn(x, *args, **kwargs):
        return op(x, *args, inplace=True, **kwargs)

    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"``{name}(x, ..., inplace=True)``: the result written into x, returned."
    return fn


# PyTorch's in-place activations: functional.<name>_ for each, torch.<name>_ for some
for _name, _top in (("relu", False), ("elu", False), ("leaky_relu", False),
                    ("hardtanh", False), ("selu", True), ("celu", True), ("threshold", True),
                    ("rrelu", True)):
    public(top=_top, name=_name + "_")(_in_place(_name))


def _with_indices(name: str):
    """``F.<name>_with_indices(...)``: ``F.<name>(..., return_indices=True)``."""
    op = FUNCTIONAL[name]

    def fn(*args, **kwargs):
        kwargs.pop("return_indices", None)
        return op(*args, return_indices=True, **kwargs)

    fn.__name__ = fn.__qualname__ = name + "_with_indices"
    fn.__doc__ = f"``{name}(..., return_indices=True)``: (output, indices)."
    return fn


for _name in ("max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d",
              "adaptive_max_pool2d", "adaptive_max_pool3d"):
    public(name=_name + "_with_indices")(_with_indices(_name))


public(top=True, functional=False)(printing.set_printoptions)


@public(method=True, top=True, functional=False)
def ldexp(x: Tensor, other) -> Tensor:
    """``x * 2 ** other`` in floating point (integer inputs in the default float dtype)."""
    _tensor("ldexp", x)
    from fastnn.api import dtypes

    if not x.dtype.is_floating:
        x = x.to(dtypes.get_default_dtype())
    power = other if isinstance(other, Tensor) else tensor(other, dtype=x.dtype,
                                                           device=x.device)
    if not power.dtype.is_floating:
        power = power.to(x.dtype)
    return ew.mul(x, power.exp2())
