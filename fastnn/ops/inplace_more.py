"""The rest of PyTorch's ``_`` methods, derived from their out-of-place ops.

:data:`VALUE_OPS` names the ops whose in-place form keeps x's shape: each ``x.<op>_(...)``
is ``x.<op>(...)`` written into x through :func:`fastnn.ops.storage.inplace` (views see
it, the write clock guards a backward through an overwritten value, a leaf that requires
grad is refused outside ``no_grad``), exactly as ``add_`` and the others in
:mod:`fastnn.ops.inplace`. :data:`SHAPE_OPS` change x's shape in place (``squeeze_``,
``t_`` ...): x takes the view's shape and history.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.autograd import grad_mode
from fastnn.ops import inplace as _inplace  # noqa: F401  (add_, relu_ ...: read below)
from fastnn.ops import shaping
from fastnn.ops.aliases import t as transpose_2d
from fastnn.ops.joining import cat
from fastnn.ops.spelling import shape_of
from fastnn.ops.storage import check_inplace, inplace
from fastnn.ops.table import METHODS, TOP
from fastnn.ops.tensor import Tensor, tensor, zeros

VALUE_OPS = (
    # rounding and powers
    "floor", "ceil", "round", "trunc", "fix", "frac", "reciprocal", "rsqrt", "square",
    "exp2", "expm1", "log1p", "log2", "log10", "sgn", "nan_to_num", "logit", "float_power",
    # trigonometry and special functions
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "atan2", "arctan2",
    "hypot", "erf", "erfc", "erfinv", "lgamma", "digamma", "sinc", "xlogy", "deg2rad",
    "rad2deg", "i0", "polygamma", "igamma", "igammac",
    # arithmetic under PyTorch's other names
    "negative", "absolute", "divide", "true_divide", "subtract", "multiply", "fmod",
    "remainder", "floor_divide", "copysign", "gcd", "lcm", "ldexp", "heaviside",
    "addbmm", "addr",
    # comparisons and logic (the result, 0 or 1, in x's dtype)
    "eq", "ne", "not_equal", "gt", "lt", "ge", "le", "greater", "less", "greater_equal",
    "less_equal", "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    # along a dim, same shape
    "cumsum", "cumprod", "renorm",
)


def _value_method(name: str, fn):
    def method(x: Tensor, *args, **kwargs) -> Tensor:
        return inplace(name, x, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``x.{name[:-1]}(...)`` written into x, in place."
    return method


for _op in VALUE_OPS:
    METHODS[_op + "_"] = _value_method(_op + "_", METHODS[_op])


def _reshape_method(name: str, fn):
    def method(x: Tensor, *args, **kwargs) -> Tensor:
        check_inplace(name, x)
        storage = x._storage
        if x._view is not None or (storage is not None and storage.viewed):
            raise RuntimeError(
                f"{name}: changing a tensor's shape in place needs a tensor without views "
                f"(this one is a view, or has one); use x = x.{name[:-1]}(...) instead")
        before = Tensor._make(x._data, x._dtype, x._device)  # x as it is, with its history
        before._node, before._requires_grad = x._node, x._requires_grad
        after = fn(before, *args, **kwargs)
        x._data = x._device.ops.contiguous(after._data)  # a base is laid out in C order
        if grad_mode.switches.grad and after._requires_grad:
            x._node, x._requires_grad = after._node, True
        return x

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"x becomes ``x.{name[:-1]}(...)`` in place: its shape changes, its "
                      "values and storage stay (x must have no views).")
    return method


SHAPE_OPS = {"squeeze": shaping.squeeze, "unsqueeze": shaping.unsqueeze, "t": transpose_2d,
             "transpose": shaping.swap, "swapaxes": shaping.swap, "swapdims": shaping.swap}
for _op, _fn in SHAPE_OPS.items():
    METHODS[_op + "_"] = _reshape_method(_op + "_", _fn)


# the in-place methods PyTorch also has as functions (``torch.relu_(x)`` is ``x.relu_()``)
TOP_INPLACE = (
    "abs_", "neg_", "negative_", "exp_", "exp2_", "expm1_", "log_", "log2_", "log10_",
    "log1p_", "sqrt_", "rsqrt_", "square_", "reciprocal_", "relu_", "sigmoid_", "tanh_",
    "logit_", "sin_", "cos_", "tan_", "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_",
    "acosh_", "atanh_", "arcsin_", "arccos_", "arctan_", "arcsinh_", "arccosh_",
    "arctanh_", "erf_", "erfc_", "sinc_", "xlogy_", "deg2rad_", "rad2deg_", "floor_",
    "ceil_", "round_", "trunc_", "fix_", "frac_", "nan_to_num_", "clamp_", "clamp_min_",
    "clamp_max_", "clip_", "fill_", "zero_", "detach_", "index_put_", "addmv_", "gcd_",
    "lcm_", "i0_", "ldexp_",
)
for _name in TOP_INPLACE:
    TOP.setdefault(_name, METHODS[_name])


def resize_(x: Tensor, *sizes, memory_format=None) -> Tensor:
    """x takes the shape ``sizes`` in place, as PyTorch's ``resize_``: its elements in
    order, the first ``numel`` of them kept when it shrinks, zeros appended when it grows
    (PyTorch's are uninitialised; NOTE: after a shrink, a grow gives zeros where PyTorch's
    unshrunk storage still held the old values). A tensor that requires grad is refused,
    as PyTorch refuses it; so is a view or a tensor with views, unless the shape stays."""
    shape = shape_of("resize_", sizes)
    if shape == x.shape:
        return x
    if x._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    check_inplace("resize_", x)
    storage = x._storage
    if x._view is not None or (storage is not None and storage.viewed):
        raise RuntimeError(
            "resize_: changing the shape of a tensor that is a view or has views is not "
            "supported by fastnn; take x = x.reshape(...) (same size) or a new tensor")
    ops, have = x._device.ops, x.numel()
    # (a detached tensor over x's array: a view of x itself would mark x viewed)
    flat = Tensor._make(ops.reshape(ops.contiguous(x._data), (have,)), x._dtype, x._device)
    count = math.prod(shape)
    if count <= have:
        flat = flat[:count]
    else:
        flat = cat([flat, zeros(count - have, dtype=x.dtype, device=x.device)])
    x._data = ops.contiguous(ops.reshape(ops.contiguous(flat._data), shape))
    x._node = None
    return x


def resize_as_(x: Tensor, other: Tensor, *, memory_format=None) -> Tensor:
    """``x.resize_(other.shape)``."""
    return resize_(x, other.shape)


METHODS["resize_"], METHODS["resize_as_"] = resize_, resize_as_
TOP.setdefault("resize_as_", resize_as_)


def _refuse_grad(name: str, x: Tensor) -> None:
    if x._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _put_values(x: Tensor, values: list) -> Tensor:
    """x's elements replaced in place by ``values`` (Python numbers, x's C order), cast to
    x's dtype as PyTorch casts a number (a float into an int tensor: truncated)."""
    host = np.asarray(values, dtype=np.float64 if x.dtype.is_floating else None)
    host = host.reshape(x.shape).astype(x.dtype.numpy)
    return x.copy_(tensor(host, dtype=x.dtype, device=x.device))


def _numbers(x: Tensor) -> list:
    """x's elements as Python numbers in C order (no view of x is made: a view would mark
    its storage as viewed)."""
    return np.asarray(x.tolist()).reshape(-1).tolist()


def apply_(x: Tensor, callable) -> Tensor:  # noqa: A002  (PyTorch's argument name)
    """Every element of x replaced by ``callable(element)`` (a Python number in, one out),
    in place; a tensor that requires grad is refused, as PyTorch's. Slow: one Python call
    per element (PyTorch's runs on the CPU alone; fastnn's on any device, through the
    host)."""
    _refuse_grad("apply_", x)
    return _put_values(x, [callable(v) for v in _numbers(x)])


def map_(x: Tensor, other: Tensor, callable) -> Tensor:  # noqa: A002
    """Every element of x replaced by ``callable(element, other's element)``, with
    ``other`` broadcast to x's shape, in place (see :func:`apply_`)."""
    _refuse_grad("map_", x)
    if not isinstance(other, Tensor):
        raise TypeError(f"map_: other must be a Tensor, got {type(other).__name__}")
    pairs = zip(_numbers(x), np.broadcast_to(np.asarray(other.tolist()), x.shape).reshape(
        -1).tolist())
    return _put_values(x, [callable(a, b) for a, b in pairs])


METHODS["apply_"], METHODS["map_"] = apply_, map_
