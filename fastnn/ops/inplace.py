"""The in-place ops: ``x += y`` and the other augmented assignments, and the ``_`` methods
(``add_``, ``mul_``, ``clamp_``, ``zero_``, ``copy_``, ``masked_fill_``, ``uniform_`` ...).

Each computes its out-of-place op and writes the result into ``x`` through
:func:`fastnn.ops.storage.inplace`: every view of x's storage sees it, the write clock
catches a later backward through a value it overwrote, a leaf that requires grad is
refused outside ``no_grad``, and with grad mode on the op is recorded on the tape.
"""

from __future__ import annotations

import numbers

from fastnn.api import dtypes
from fastnn.ops import activations as act
from fastnn.ops import aliases, mathops, scattering
from fastnn.ops import elementwise as ew
from fastnn.ops import gathering as ga
from fastnn.ops.core import check_same_device
from fastnn.ops.creation import full_like
from fastnn.ops.storage import base_of, check_inplace, inplace, write
from fastnn.ops.table import METHODS, public
from fastnn.ops.tensor import Tensor, rand, randn


def _scaled(op, alpha):
    """``op`` with its ``alpha=`` bound (ew.add and ew.sub scale the other operand)."""
    if alpha == 1:
        return op
    return lambda x, y: op(x, y, alpha=alpha)


@public(method=True, functional=False)
def add_(x: Tensor, other, *, alpha=1) -> Tensor:
    """x += alpha * other, in place."""
    return inplace("add_", x, _scaled(ew.add, alpha), other)


@public(method=True, functional=False)
def sub_(x: Tensor, other, *, alpha=1) -> Tensor:
    """x -= alpha * other, in place."""
    return inplace("sub_", x, _scaled(ew.sub, alpha), other)


def _unary(name: str, fn):
    def method(x: Tensor) -> Tensor:
        return inplace(name, x, fn)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``x.{name[:-1]}()`` written into x, in place."
    return method


def _binary(name: str, fn):
    def method(x: Tensor, other) -> Tensor:
        return inplace(name, x, fn, other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``x.{name[:-1]}(other)`` written into x, in place."
    return method


for _name, _fn in {"mul_": ew.mul, "div_": ew.div, "pow_": ew.pow,
                   "maximum_": ew.maximum, "minimum_": ew.minimum}.items():
    METHODS[_name] = _binary(_name, _fn)
for _name, _fn in {"neg_": ew.neg, "abs_": ew.abs, "exp_": ew.exp, "log_": ew.log,
                   "sqrt_": ew.sqrt, "sigmoid_": act.sigmoid, "tanh_": act.tanh,
                   "relu_": act.relu, "sign_": ew.sign}.items():
    METHODS[_name] = _unary(_name, _fn)


@public(method=True, functional=False)
def clamp_(x: Tensor, min=None, max=None) -> Tensor:
    """``x.clamp(min, max)`` written into x, in place (alias ``clip_``)."""
    return inplace("clamp_", x, mathops.clamp, min, max)


METHODS["clip_"] = clamp_


@public(method=True, functional=False)
def clamp_min_(x: Tensor, min) -> Tensor:
    """x = max(x, min), in place."""
    return inplace("clamp_min_", x, mathops.clamp, min, None)


@public(method=True, functional=False)
def clamp_max_(x: Tensor, max) -> Tensor:
    """x = min(x, max), in place."""
    return inplace("clamp_max_", x, mathops.clamp, None, max)


def _filled(x: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.ndim:
            raise RuntimeError(f"fill_: only a 0-d tensor value is supported, got shape "
                               f"{value.shape}")
        check_same_device("fill_", x, value)
        return value.to(x._dtype).broadcast_to(x.shape)
    if not isinstance(value, numbers.Number):
        raise TypeError(f"fill_: value must be a number or a 0-d tensor, got "
                        f"{type(value).__name__}")
    return full_like(x, value)


@public(method=True, functional=False)
def fill_(x: Tensor, value) -> Tensor:
    """Every element of x set to ``value`` (a number or a 0-d tensor), in place."""
    return inplace("fill_", x, _filled, value)


@public(method=True, functional=False)
def zero_(x: Tensor) -> Tensor:
    """Every element of x set to 0, in place."""
    return inplace("zero_", x, _filled, 0)


def _copied(x: Tensor, src) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_: src must be a Tensor, got {type(src).__name__}; wrap it with "
                        "fnn.tensor(...)")
    src = src.to(x._device, x._dtype)
    try:
        return src.broadcast_to(x.shape)
    except ValueError:
        raise RuntimeError(f"copy_: src of shape {src.shape} cannot be broadcast to "
                           f"{x.shape}") from None


@public(method=True, functional=False)
def copy_(x: Tensor, src) -> Tensor:
    """src's values (broadcast, converted to x's dtype, moved to x's device) written into
    x; gradients flow back to src."""
    return inplace("copy_", x, _copied, src)


@public(method=True, functional=False)
def masked_fill_(x: Tensor, mask, value) -> Tensor:
    """``value`` written where ``mask`` is True, in place."""
    return inplace("masked_fill_", x, aliases.masked_fill, mask, value)


@public(method=True, functional=False)
def masked_scatter_(x: Tensor, mask, source) -> Tensor:
    """Where ``mask`` is True, x takes source's values in order, in place."""
    def compute(t, mask, source):
        out = t.clone()
        out[mask.broadcast_to(t.shape)] = source.reshape(-1)[:int(mask.broadcast_to(
            t.shape).sum())]
        return out

    return inplace("masked_scatter_", x, compute, mask, source)


for _name in ("index_add", "index_copy", "index_fill", "scatter", "lerp", "addcmul",
              "addcdiv"):
    def _make(name, fn):
        def method(x: Tensor, *args, **kwargs) -> Tensor:
            return inplace(name + "_", x, fn, *args, **kwargs)

        method.__name__ = method.__qualname__ = name + "_"
        method.__doc__ = f"``x.{name}(...)`` written into x, in place."
        return method

    METHODS[_name + "_"] = _make(_name, getattr(scattering, _name))


def scatter_add_(x: Tensor, dim, index, src) -> Tensor:
    """``x.scatter_add(dim, index, src)`` written into x, in place."""
    return inplace("scatter_add_", x, ga.scatter_add, dim, index, src)


METHODS["scatter_add_"] = scatter_add_


# ---------------------------------------------------------------- random fills


def _draw(op: str, x: Tensor, values: Tensor) -> Tensor:
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point tensor, got {x._dtype.name}")
    check_inplace(op, x)
    from fastnn.autograd.grad_mode import no_grad

    with no_grad():
        write(x, values.to(x._dtype))
    return x


@public(method=True, functional=False)
def uniform_(x: Tensor, a=0.0, b=1.0) -> Tensor:
    """Samples from U(a, b) written into x, from fastnn's generator (``manual_seed``)."""
    return _draw("uniform_", x, rand(x.shape, dtype=x._dtype, device=x._device) * (b - a) + a)


@public(method=True, functional=False)
def normal_(x: Tensor, mean=0.0, std=1.0) -> Tensor:
    """Samples from N(mean, std**2) written into x, from fastnn's generator."""
    return _draw("normal_", x, randn(x.shape, dtype=x._dtype, device=x._device) * std + mean)


@public(method=True, functional=False)
def bernoulli_(x: Tensor, p=0.5) -> Tensor:
    """1 with probability ``p`` (a number or a tensor like x), else 0, written into x."""
    draw = rand(x.shape, dtype=x._dtype if x._dtype.is_floating else dtypes.float32,
                device=x._device)
    ones = ew.compare("less", draw, p)
    return _draw("bernoulli_", x, ones.to(x._dtype if x._dtype.is_floating
                                           else dtypes.float32))


# ---------------------------------------------------------------- autograd state


@public(method=True, functional=False)
def detach_(x: Tensor) -> Tensor:
    """x itself, cut from its history (a leaf without grad), in place."""
    if x._view is not None and base_of(x)._node is not None:
        raise RuntimeError("detach_: cannot detach a view of a tensor with history in place; "
                           "use x.detach() (a new tensor) instead")
    x._node, x._requires_grad = None, False
    return x


def _scatter_reduce_(x: Tensor, *args, **kwargs) -> Tensor:
    """``x.scatter_reduce(...)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import scatter_reduce

    return inplace("scatter_reduce_", x, scatter_reduce, *args, **kwargs)


def _index_put_(x: Tensor, indices, values, accumulate=False) -> Tensor:
    """``x.index_put(indices, values, accumulate)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import index_put

    return inplace("index_put_", x, index_put, indices, values, accumulate)


def _put_(x: Tensor, index, source, accumulate=False) -> Tensor:
    """``x.put(index, source, accumulate)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import put

    return inplace("put_", x, put, index, source, accumulate)


for _name, _fn in (("scatter_reduce_", _scatter_reduce_), ("index_put_", _index_put_),
                   ("put_", _put_)):
    _fn.__name__ = _fn.__qualname__ = _name
    METHODS[_name] = _fn


def _struct_inplace(name: str, module: str):
    def method(x: Tensor, *args, **kwargs) -> Tensor:
        import importlib

        fn = getattr(importlib.import_module(module), name)
        return inplace(name + "_", x, fn, *args, **kwargs)

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"``x.{name}(...)`` written into x, in place."
    return method


for _name, _module in (("tril", "fastnn.ops.structure"), ("triu", "fastnn.ops.structure"),
                       ("addmm", "fastnn.ops.products"), ("baddbmm", "fastnn.ops.products"),
                       ("addmv", "fastnn.ops.products")):
    METHODS[_name + "_"] = _struct_inplace(_name, _module)
