"""``out=`` on the functions where PyTorch users write it: ``fnn.add(a, b, out=c)``,
``fnn.rand(2, 2, out=c)``.

The result is computed as usual and written into ``out`` (every view of out's storage
sees it); an ``out`` of another shape is resized first, as PyTorch does, when nothing
views it. As in PyTorch, ``out=`` does not record gradients: with an input that requires
grad (in grad mode) it raises; and a call given ``out=`` does not autocast.
"""

from __future__ import annotations

import functools

from fastnn.api import dtypes
from fastnn.autograd import grad_mode
from fastnn.ops import autocasting
from fastnn.ops import tensor as tensor_module
from fastnn.ops.core import astype, check_same_device
from fastnn.ops.storage import rebind, write
from fastnn.ops.table import TOP
from fastnn.ops.tensor import Tensor

# PyTorch's functions with an out= argument that scripts use
NAMES = ("add", "sub", "mul", "div", "pow", "matmul", "mm", "bmm", "cat", "stack", "exp",
         "log", "sqrt", "abs", "neg", "sin", "cos", "tanh", "sigmoid", "clamp", "where",
         "maximum", "minimum", "sum", "mean", "prod", "cumsum", "floor", "ceil", "round",
         "remainder", "fmod", "lerp", "addcmul", "addcdiv", "index_select", "gather",
         "mv", "dot", "outer", "addmm", "addmv", "baddbmm", "kron", "cross", "tril", "triu",
         "masked_select", "take", "searchsorted", "bucketize", "nonzero", "tensordot")

# PyTorch's factories with an out= argument: they make their values in out's dtype, on
# out's device (torch.arange(5, out=a_float_tensor) counts in floats)
FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
             "arange", "linspace", "logspace", "eye")

# the reductions whose out= PyTorch reads as their dtype= (sum of floats into an int64 out)
_OUT_IS_DTYPE = ("sum", "cumsum", "prod")


def with_out(fn):
    """``fn`` taking PyTorch's keyword ``out=``."""

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        _check_out(fn, out)
        return _write_into(fn, out, args, kwargs)

    call.takes_out = True
    return call


def with_out_factory(fn):
    """The factory ``fn`` taking PyTorch's keyword ``out=``: its values are made in out's
    dtype (a ``dtype=`` that differs raises, as PyTorch) on out's device, then written
    into out as :func:`with_out` writes."""

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        _check_out(fn, out)
        dtype = kwargs.get("dtype")
        if dtype is not None and dtypes.as_dtype(dtype) is not out._dtype:
            raise RuntimeError(f"{fn.__name__}: dtype {dtypes.as_dtype(dtype).name} does not "
                               f"match the dtype of out ({out._dtype.name}); drop dtype= or "
                               "pass an out of that dtype")
        kwargs["dtype"], kwargs["device"] = out._dtype, out._device
        return _write_into(fn, out, args, kwargs)

    call.takes_out = True
    return call


def _check_out(fn, out) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"{fn.__name__}: out must be a Tensor, got {type(out).__name__}")


def _write_into(fn, out, args, kwargs):
    """``fn(*args, **kwargs)`` computed as usual and written into ``out``; returns out."""
    if grad_mode.switches.grad and (out._requires_grad or any(
            isinstance(a, Tensor) and a._requires_grad for a in args)):
        raise RuntimeError(f"{fn.__name__}(): functions with out=... arguments don't "
                           "support automatic differentiation; drop out= or call it "
                           "under fnn.no_grad()")
    result = autocasting.below(fn, *args, **kwargs)  # out= calls do not autocast
    check_same_device(fn.__name__, out, result)
    if result._dtype is not out._dtype:
        if dtypes.category(result._dtype) > dtypes.category(out._dtype) and \
                fn.__name__ not in _OUT_IS_DTYPE:
            raise RuntimeError(f"{fn.__name__}: result type {result._dtype.name} can't be "
                               f"cast to the desired output type {out._dtype.name} (as "
                               "PyTorch's out=); pass an out of the result's dtype")
        result = astype(result, out._dtype)
    if result.shape != out.shape:
        if out._view is not None or (out._storage is not None and out._storage.viewed):
            raise RuntimeError(f"{fn.__name__}: out has shape {out.shape} and is viewed, "
                               f"the result has shape {result.shape}; pass an out of "
                               "the result's shape")
        rebind(out, result._data)
    else:
        write(out, result)
    return out


def install() -> None:
    """Give every function of NAMES and FACTORIES in the ``fnn.NAME`` table its ``out=``."""
    for name in NAMES:
        if name in TOP and not getattr(TOP[name], "takes_out", False):
            TOP[name] = with_out(TOP[name])
    for name in FACTORIES:  # zeros, ones, full, rand and randn live outside the table
        fn = TOP.get(name) or getattr(tensor_module, name)
        if not getattr(fn, "takes_out", False):
            TOP[name] = with_out_factory(fn)
