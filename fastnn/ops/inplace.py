"""The in-place ops: ``x += y`` and the other augmented assignments, and the ``_`` methods
(``add_``, ``mul_``, ``clamp_``, ``zero_``, ``copy_``, ``masked_fill_``, ``uniform_`` ...).

Each computes its out-of-place op and writes the result into ``x`` through
:func:`fastnn.ops.storage.inplace`: every view of x's storage sees it, the write clock
catches a later backward through a value it overwrote, a leaf that requires grad is
refused outside ``no_grad``, and with grad mode on the op is recorded on the tape.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api import dtypes
from fastnn.ops import activations as act
from fastnn.ops import aliases, mathops, scattering
from fastnn.ops import elementwise as ew
from fastnn.ops import gathering as ga
from fastnn.ops.core import check_same_device
from fastnn.ops.creation import full_like
from fastnn.ops.storage import check_inplace, inplace, overwritten, write
from fastnn.ops.table import METHODS, public
from fastnn.ops.tensor import Tensor, rand, randn, tensor
from fastnn.ops.view_layout import base_of


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


@public(method=True, functional=False, aliases=("divide_",))
def div_(x: Tensor, other, *, rounding_mode=None) -> Tensor:
    """``x.div(other, rounding_mode=...)`` written into x, in place (an integer x takes
    only a rounded division, as PyTorch)."""
    return inplace("div_", x, mathops.div_rounded, other, rounding_mode=rounding_mode)


@public(method=True, functional=False)
def pow_(x: Tensor, exponent) -> Tensor:
    """x = x ** exponent, in place (PyTorch's name of the argument)."""
    return inplace("pow_", x, ew.pow, exponent)


for _name, _fn in {"mul_": ew.mul, "maximum_": ew.maximum, "minimum_": ew.minimum}.items():
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
def copy_(x: Tensor, src, non_blocking: bool = False) -> Tensor:
    """src's values (broadcast, converted to x's dtype, moved to x's device) written into
    x; gradients flow back to src. ``non_blocking`` is accepted, as PyTorch's (the copy is
    done when copy_ returns)."""
    return inplace("copy_", x, _copied, src)


@public(method=True, functional=False)
def masked_fill_(x: Tensor, mask, value) -> Tensor:
    """``value`` written where ``mask`` is True, in place."""
    return inplace("masked_fill_", x, aliases.masked_fill, mask, value)


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
    return _write_drawn(op, x, values)


@public(method=True, functional=False)
def uniform_(x: Tensor, a=0.0, b=1.0, *, generator=None) -> Tensor:
    """Samples from U(a, b) written into x, from fastnn's generator (``manual_seed``) or
    the fnn.Generator given."""
    draw = rand(x.shape, dtype=x._dtype, device=x._device, generator=generator)
    return _draw("uniform_", x, draw * (b - a) + a)


@public(method=True, functional=False)
def normal_(x: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Samples from N(mean, std**2) written into x, from fastnn's generator or the one
    given."""
    draw = randn(x.shape, dtype=x._dtype, device=x._device, generator=generator)
    return _draw("normal_", x, draw * std + mean)


@public(method=True, functional=False)
def bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """1 with probability ``p`` (a number or a tensor like x), else 0, written into x of
    any dtype (an integer or bool x too, as PyTorch's)."""
    return _write_drawn("bernoulli_", x, ew.compare("less", _uniforms(x, generator), p))


def _uniforms(x: Tensor, generator) -> Tensor:
    """Uniforms in [0, 1) shaped as x, in x's float dtype (float32 for an integer x)."""
    kind = x._dtype if x._dtype.is_floating else dtypes.float32
    return rand(x.shape, dtype=kind, device=x._device, generator=generator)


def _positive(op: str, name: str, value) -> None:
    if not value > 0:
        raise ValueError(f"{op} expects {name} > 0.0, but found {name}={value}")


@public(method=True, functional=False)
def exponential_(x: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Samples from the exponential distribution of rate ``lambd`` written into x."""
    _positive("exponential_", "lambda", lambd)
    u = _uniforms(x, generator)
    return _draw("exponential_", x, (-u).log1p() * (-1.0 / lambd))


@public(method=True, functional=False)
def log_normal_(x: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Samples of exp(N(mean, std**2)) written into x."""
    _positive("log_normal_", "std", std)
    return _draw("log_normal_", x, (randn(x.shape, dtype=x._dtype, device=x._device,
                                          generator=generator) * std + mean).exp())


@public(method=True, functional=False)
def cauchy_(x: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Samples from the Cauchy distribution (``median``, scale ``sigma``) written into x."""
    _positive("cauchy_", "sigma", sigma)
    u = _uniforms(x, generator)
    return _draw("cauchy_", x, ((u - 0.5) * math.pi).tan() * sigma + median)


@public(method=True, functional=False)
def geometric_(x: Tensor, p, *, generator=None) -> Tensor:
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...) written into x
    (any real dtype, as PyTorch's)."""
    if not 0 < p < 1:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniforms(x, generator)
    trials = ((-u).log1p() * (1.0 / math.log1p(-p))).floor() + 1
    return _write_drawn("geometric_", x, trials)


_RANDOM_TOP = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**53,
               "int64": 2**63 - 2, "bool": 1}  # the other integers: their largest value


@public(method=True, functional=False)
def random_(x: Tensor, from_=0, to=None, *, generator=None) -> Tensor:
    """Integers uniform in [from, to - 1] written into x: ``random_(to)``, ``random_(from,
    to)``, or ``random_()`` for [0, 2**mantissa] of a float dtype (2**24 for float32, as
    PyTorch's) and [0, 2**63 - 2] of int64."""
    from fastnn.ops.creation import randint

    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        top = _RANDOM_TOP.get(x._dtype.name)
        to = (dtypes.int_range(x._dtype)[1] if top is None else top) + 1
    if to <= from_:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={from_} >= to={to}")
    return _write_drawn("random_", x, randint(from_, to, x.shape, device=x._device,
                                              generator=generator))


def _write_drawn(op: str, x: Tensor, values: Tensor) -> Tensor:
    """``values`` written into x of any dtype; a non-leaf x's history gets a zero gradient
    (PyTorch's ``UniformBackward0`` ...), else the write is outside the tape."""
    check_inplace(op, x)
    from fastnn.autograd.grad_mode import is_grad_enabled, no_grad

    values = values.to(x._dtype)
    if is_grad_enabled() and x._requires_grad:
        write(x, overwritten(op, x, values))
        return x
    with no_grad():
        write(x, values)
    return x


@public(method=True, functional=False)
def fill_diagonal_(x: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """``fill_value`` written on x's main diagonal (x 2-D, or all its dims of one size),
    in place; ``wrap=True`` restarts the diagonal of a tall matrix after each ``cols``
    rows and a gap row, as PyTorch's."""
    if x.ndim < 2:
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("fill_diagonal_: all dimensions of input must be of equal length")
    n = x.shape[0]
    if x.ndim > 2:  # (i, i, ..., i) in C order
        flat = np.arange(n) * sum(n ** k for k in range(x.ndim))
    else:  # every (cols + 1)th element in C order, below the square only when wrapped
        rows, cols = x.shape
        flat = np.arange(0, rows * cols if wrap else min(rows, cols) * cols, cols + 1)
    where = np.unravel_index(flat, x.shape)
    x[tuple(tensor(w, device=x._device) for w in where)] = fill_value
    return x


@public(method=True, functional=False)
def masked_scatter_(x: Tensor, mask, source) -> Tensor:
    """``x.masked_scatter(mask, source)`` written into x, in place."""
    return inplace("masked_scatter_", x, scattering.masked_scatter, mask, source)


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


def _index_reduce_(x: Tensor, *args, **kwargs) -> Tensor:
    """``x.index_reduce(...)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import index_reduce

    return inplace("index_reduce_", x, index_reduce, *args, **kwargs)


def _index_put_(x: Tensor, indices, values, accumulate=False) -> Tensor:
    """``x.index_put(indices, values, accumulate)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import index_put

    return inplace("index_put_", x, index_put, indices, values, accumulate)


def _put_(x: Tensor, index, source, accumulate=False) -> Tensor:
    """``x.put(index, source, accumulate)`` written into x, in place."""
    from fastnn.ops.scatter_reduce import put

    return inplace("put_", x, put, index, source, accumulate)


for _name, _fn in (("scatter_reduce_", _scatter_reduce_), ("index_put_", _index_put_),
                   ("put_", _put_), ("index_reduce_", _index_reduce_)):
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
