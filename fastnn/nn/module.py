"""Modules: the base of every layer, with PyTorch's ``nn.Module`` protocol and the
reversible-module contract.

A :class:`Module` runs ``forward`` on the tape when called (through its hooks, if it has
any: :mod:`fastnn.nn.hooks`), walks its tree as PyTorch does
(:mod:`fastnn.nn.module_tree`), saves and loads its state
(:mod:`fastnn.nn.module_state`), and also offers the reversible pair::

    grad_x, self_grads = layer.reverse(x, grad_out)
    layer.apply(optimizer, self_grads)

``reverse`` computes dL/dx and dL/d(own parameters) from the input ``x`` and
dL/dy alone: nothing kept from an earlier forward call. The base class derives
it from a private tape over the module's own forward; a layer writes its own
only where that measured faster (benchmarks/bench_reverse.py).

``self_grads`` is a dict ``name -> Tensor`` whose names are exactly this
module's ``named_parameters()`` names (dotted paths for containers, e.g.
``"0.weight"``), so any module's grads can be applied by the generic
:meth:`Module.apply`. ``apply`` is told apart by its arguments: ``apply(fn)``
with one callable is PyTorch's (``fn`` on every sub-module), ``apply(optimizer,
self_grads)`` the update.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading

from fastnn.api.errors import DeviceMismatchError
from fastnn.autograd.grad_mode import enable_grad, no_grad
from fastnn.nn.hooks import HooksMixin, call_with_hooks
from fastnn.nn.members import Members, bind_members
from fastnn.nn.module_state import ModuleState
from fastnn.nn.module_tree import ModuleTree
from fastnn.nn.parameter import (  # noqa: F401  (layers import these from here too)
    PARAM_CLASSES,
    Buffer,
    Parameter,
    const_init,
    fan_in_bound,
    uniform_init,
    wrap,
)
from fastnn.nn.state_hooks import StateHooksMixin
from fastnn.ops import autocasting
from fastnn.ops.tensor import Tensor


class _Keeping(threading.local):
    depth = 0  # a class default: a plain lookup, as for the grad-mode switches


_keeping = _Keeping()


@contextlib.contextmanager
def keep_buffers():
    """Inside, forward passes leave every buffer as it is (BatchNorm's running statistics):
    ``reverse`` runs its forward passes in here, since it must not update a buffer."""
    depth = _keeping.depth
    _keeping.depth = depth + 1
    try:
        yield
    finally:
        _keeping.depth = depth


def buffers_kept() -> bool:
    """True inside :func:`keep_buffers` (a layer's forward must then not update buffers)."""
    return _keeping.depth > 0


def check_input_dtype(module, x) -> None:
    """A floating input must have the dtype of the layer's own parameters (as PyTorch): a
    float32 layer given float64 would otherwise compute in float64 without saying so."""
    if isinstance(x, Tensor) and x._dtype.is_floating:
        param = next(iter(module._parameters.values()))
        if param is not None and param._dtype is not x._dtype and not (
                autocasting.state.on and autocasting.mixes(x, param)):
            raise TypeError(
                f"{type(module).__name__}: input is {x._dtype.name} but the layer's parameters "
                f"are {param._dtype.name}; convert the input with x.to(fnn.{param._dtype.name}) "
                f"or the layer with .to(fnn.{x._dtype.name})"
            )


def check_tensor(layer, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: expected a fastnn Tensor, got {type(x).__name__}")
    return x


def check_grad(layer: str, x: Tensor, grad_out, out_shape=None) -> Tensor:
    """``grad_out`` for ``layer.reverse(x, grad_out)``: a Tensor shaped like the layer's
    output (``out_shape``, default x's shape), on x's device and dtype, x floating point.

    Backward kernels index grad_out by the shapes of x and the parameters, so a
    mismatch would read the wrong elements (or past the end of a device buffer).
    """
    check_tensor(layer, x)
    if not isinstance(grad_out, Tensor):
        raise TypeError(
            f"{layer}.reverse: grad_out must be a fastnn Tensor, got {type(grad_out).__name__}"
        )
    if not x.dtype.is_floating:
        raise TypeError(f"{layer}.reverse: x must be floating point, got {x.dtype.name}")
    want = x.shape if out_shape is None else tuple(out_shape)
    if grad_out.shape != want:
        raise ValueError(
            f"{layer}.reverse: grad_out must have the shape of the layer's output {want} "
            f"(for x of shape {x.shape}), got {grad_out.shape}"
        )
    if grad_out.device != x.device:
        raise DeviceMismatchError(
            f"{layer}.reverse: grad_out is on {grad_out.device}, x on {x.device}; move one "
            f"with .to()"
        )
    if grad_out.dtype is not x.dtype:
        raise TypeError(
            f"{layer}.reverse: grad_out is {grad_out.dtype.name} but x is {x.dtype.name}; "
            f"convert with grad_out.to(fnn.{x.dtype.name})"
        )
    return grad_out


class _NotGiven:
    """The default of an argument that may be left out, told apart from None."""

    def __repr__(self) -> str:
        return "<not given>"


_MISSING = _NotGiven()


@functools.cache
def _forward_parameters(cls) -> frozenset:
    return frozenset(inspect.signature(cls.forward).parameters)


def _input_by_name(cls, kwargs: dict) -> tuple:
    """``layer(input=t)``: PyTorch's layers name their tensor ``input``, fastnn's ``x``;
    where forward has no parameter ``input``, t is its first argument."""
    if "input" in _forward_parameters(cls):
        return (), kwargs
    kwargs = dict(kwargs)
    return (kwargs.pop("input"),), kwargs


class Module(HooksMixin, StateHooksMixin, ModuleTree, ModuleState):
    """Base class of layers: parameters, buffers, sub-modules, hooks, state dicts and the
    reversible pair, with PyTorch's ``nn.Module`` protocol.

    Traversal (``parameters()``, ``named_modules()``, ...), ``train``/``eval``,
    ``zero_grad`` and ``requires_grad_`` live in :mod:`fastnn.nn.module_tree`; hooks in
    :mod:`fastnn.nn.hooks`; buffers, ``state_dict``, ``load_state_dict`` and the dtype and
    device moves (``to``, ``float``, ``double``, ``half``) in :mod:`fastnn.nn.module_state`.
    """

    def __init__(self):
        members = self.__dict__
        object.__setattr__(self, "_parameters", Members(members))
        object.__setattr__(self, "_modules", Members(members))
        object.__setattr__(self, "_buffers", Members(members))
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "training", True)
        self._init_hooks()

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(
                f"{type(self).__name__}: call super().__init__() before assigning attributes"
            )
        if (name in self._parameters and isinstance(value, Tensor)
                and not isinstance(value, Parameter)):
            # e.g. `m.weight *= 0.5`: the result is a new plain Tensor, and binding it
            # would silently drop the parameter from state_dict() and the optimizer
            raise TypeError(
                f"{type(self).__name__}: cannot assign a plain Tensor to parameter {name!r} "
                f"(it would stop being a parameter: no longer saved or trained); assign an "
                f"fnn.nn.Parameter, or None to remove it, or change its values with "
                f"load_state_dict"
            )
        if isinstance(value, Buffer):
            if name not in self._buffers:
                self.register_buffer(name, value.data, value.persistent)
                return
            (self._non_persistent_buffers_set.discard if value.persistent else
             self._non_persistent_buffers_set.add)(name)
            value = value.data
        if name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}: buffer {name!r} must be a Tensor or "
                                f"None, got {type(value).__name__}")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
            return
        if (name in self._modules and isinstance(value, Module)) or (
                name in self._parameters and (value is None or isinstance(value, Parameter))):
            # replaced in its place, as torch's (None too, the name kept): named_parameters(),
            # state_dict() and an optimizer built after keep their order
            (self._modules if isinstance(value, Module) else self._parameters)[name] = value
            object.__setattr__(self, name, value)
            return
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        member = name in self._parameters or name in self._modules or name in self._buffers
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if self._buffers.pop(name, _MISSING) is not _MISSING:
            self._non_persistent_buffers_set.discard(name)
        if not member:  # (a member's attribute went with it)
            object.__delattr__(self, name)

    def __setstate__(self, state):
        """A copied or unpickled module: its member dicts mirror its attributes again."""
        self.__dict__.update(state)
        bind_members(self.__dict__)

    def register_parameter(self, name: str, param) -> None:
        """Add ``param`` (a Parameter, or None) under ``name``, as ``self.name = param``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"{type(self).__name__}.register_parameter: {name!r} must be an "
                            f"fnn.nn.Parameter or None, got {type(param).__name__}")
        _check_name(self, "register_parameter", name)
        if param is None:  # (registered as None, as PyTorch's: a later Parameter takes its place)
            self._parameters[name] = None
        setattr(self, name, param)

    def add_module(self, name: str, module) -> None:
        """Add the sub-module ``module`` under ``name``, as ``self.name = module``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}.add_module: {name!r} must be a fastnn "
                            f"Module or None, got {type(module).__name__}")
        _check_name(self, "add_module", name)
        if module is None:
            self._modules[name] = None
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, module)

    register_module = add_module

    # ------------------------------------------------------------ forward
    def forward(self, x):
        """The layer's output for input ``x``; what ``layer(x)`` calls. Every layer defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if kwargs and not args and "input" in kwargs:
            args, kwargs = _input_by_name(type(self), kwargs)
        if (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return call_with_hooks(self, self._checked_forward, args, kwargs)
        if self._parameters and args:
            check_input_dtype(self, args[0])
        return self.forward(*args, **kwargs)

    def _checked_forward(self, *args, **kwargs):
        if self._parameters and args:
            check_input_dtype(self, args[0])
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        """The arguments shown inside the layer's repr, e.g. ``in_features=4, out_features=2``."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): {mod!r}".replace("\n", "\n  ") for name, mod in self._modules.items()]
        extra = self.extra_repr()
        extra = extra.split("\n") if extra else []
        if len(extra) == 1 and not lines:
            return f"{type(self).__name__}({extra[0]})"
        if not extra and not lines:
            return f"{type(self).__name__}()"
        # as PyTorch: the layer's own settings (a line each) inside first, then its children
        return f"{type(self).__name__}(\n  " + "\n  ".join(extra + lines) + "\n)"

    # ------------------------------------------------------------ reversible pair
    def reverse(self, x: Tensor, grad_out: Tensor):
        """(dL/dx, {name: dL/dparam}) given dL/dy, for y = self(x), from x alone.

        Derived from the layer's own forward: one forward and backward on a private tape,
        leaving every ``.grad`` as it was. Layers override it only where a hand-written rule
        measured faster (benchmarks/bench_reverse.py). Frozen parameters
        (``requires_grad=False``) get no entry.
        """
        return tape_reverse(self, self.forward, x, grad_out)

    def apply(self, fn, self_grads=_MISSING):
        """Two calls, told apart by their arguments.

        ``apply(fn)``: PyTorch's; ``fn(module)`` on every sub-module (children first, through
        their own ``apply``) and then on this one; returns self (e.g. ``model.apply(init)``).

        ``apply(optimizer, self_grads)``: one optimizer update of this module's parameters
        from explicit gradients, the dict ``reverse`` returns second (reversible training).
        """
        if self_grads is _MISSING:
            if not callable(fn):
                raise TypeError(
                    f"{type(self).__name__}.apply: give a function of a module "
                    f"(model.apply(fn)) or an optimizer and gradients (model.apply(optimizer, "
                    f"self_grads)), got one {type(fn).__name__}"
                )
            for mod in self.children():
                mod.apply(fn)
            fn(self)
            return self
        self._apply_update(fn, self_grads)
        return None

    def _apply_update(self, optimizer, self_grads) -> None:
        if not isinstance(self_grads, dict):
            raise TypeError(
                f"{type(self).__name__}.apply: self_grads must be the dict that reverse() "
                f"returns second (grad_x, self_grads = layer.reverse(x, g)), got "
                f"{type(self_grads).__name__}"
            )
        if not callable(getattr(optimizer, "apply_gradients", None)):
            raise TypeError(
                f"{type(self).__name__}.apply: optimizer must be a fastnn optimizer (e.g. "
                f"fnn.optim.SGD(model.parameters(), lr=0.1)), got {type(optimizer).__name__}"
            )
        params = dict(self.named_parameters())
        unknown = [n for n in self_grads if n not in params]
        if unknown:
            raise KeyError(
                f"{type(self).__name__}.apply: gradients for {unknown} do not name parameters "
                f"of this module (it has {list(params)})"
            )
        # a frozen parameter is updated by neither way of training
        optimizer.apply_gradients([(params[n], g) for n, g in self_grads.items()
                                   if params[n].requires_grad])


def _check_name(module, what: str, name) -> None:
    if not isinstance(name, str) or not name or "." in name:
        raise KeyError(f"{type(module).__name__}.{what}: the name must be a non-empty string "
                       f"without '.', got {name!r}")
    if name in module.__dict__ and name not in module._parameters and name not in \
            module._modules:
        raise KeyError(f"{type(module).__name__}.{what}: {name!r} is already an attribute; "
                       f"choose another name")


def tape_reverse(module: Module, fn, x: Tensor, grad_out: Tensor):
    """(dL/dx, {name: dL/dparam}) of y = fn(x) for ``module``'s trainable parameters, from
    one forward and backward on a private tape, leaving every ``.grad`` as it was. ``fn`` is
    the module's one-tensor view (its forward, or e.g. self-attention for
    MultiheadAttention). Integer input (Embedding's indices) has no gradient: grad_x is None
    then. Frozen parameters (``requires_grad=False``) get no entry."""
    name = type(module).__name__
    check_tensor(name, x)
    floating = x.dtype.is_floating
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    saved = {n: p.grad for n, p in params.items()}
    try:
        for p in params.values():
            p.grad = None
        x_leaf = x.detach().requires_grad_(True) if floating else x
        with enable_grad(), keep_buffers():  # reverse never updates a buffer
            y = fn(x_leaf)
        if floating:
            check_grad(name, x, grad_out, y.shape)
        elif not isinstance(grad_out, Tensor) or grad_out.shape != y.shape:
            raise ValueError(f"{name}.reverse: grad_out must be a Tensor of the output's shape "
                             f"{y.shape}, got {getattr(grad_out, 'shape', type(grad_out))}")
        y.backward(grad_out)
        grads = {n: (p.grad if p.grad is not None else _zeros_like(p))
                 for n, p in params.items()}
        grad_x = None
        if floating:
            grad_x = x_leaf.grad if x_leaf.grad is not None else _zeros_like(x)
    finally:
        for n, p in params.items():
            p.grad = saved[n]
    return grad_x, grads


def _zeros_like(t: Tensor) -> Tensor:
    with no_grad():
        return wrap(t._device.ops.full(t.shape, 0, t._dtype.name, t._device.index), t)
