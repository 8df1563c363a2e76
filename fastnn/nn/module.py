"""Modules and parameters: the base of every layer, and the reversible-module contract.

A :class:`Module` runs ``forward`` on the tape when called, and also offers the
reversible pair::

    grad_x, self_grads = layer.reverse(x, grad_out)
    layer.apply(optimizer, self_grads)

``reverse`` computes dL/dx and dL/d(own parameters) from the input ``x`` and
dL/dy alone: nothing kept from an earlier forward call. The base class derives
it from a private tape over the module's own forward; a layer writes its own
only where that measured faster (benchmarks/bench_reverse.py).

``self_grads`` is a dict ``name -> Tensor`` whose names are exactly this
module's ``named_parameters()`` names (dotted paths for containers, e.g.
``"0.weight"``), so any module's grads can be applied by the generic
:meth:`Module.apply`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping

import numpy as np

from fastnn.api.args import flag
from fastnn.api.errors import DeviceMismatchError
from fastnn.autograd.grad_mode import enable_grad, no_grad
from fastnn.nn.parameter import (  # noqa: F401  (layers import these from here too)
    PARAM_CLASSES,
    Parameter,
    const_init,
    fan_in_bound,
    uniform_init,
    wrap,
)
from fastnn.ops.convert import host_array
from fastnn.ops.storage import rebind
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


def _check_input_dtype(module, x) -> None:
    """A floating input must have the dtype of the layer's own parameters (as PyTorch): a
    float32 layer given float64 would otherwise compute in float64 without saying so."""
    if isinstance(x, Tensor) and x._dtype.is_floating:
        param = next(iter(module._parameters.values()))
        if param is not None and param._dtype is not x._dtype:
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


class Module:
    """Base class of layers: parameters, sub-modules, state dicts and the reversible pair."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "training", True)

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
        if name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}: buffer {name!r} must be a Tensor or "
                                f"None, got {type(value).__name__}")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
            return
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------ forward
    def forward(self, x):
        """The layer's output for input ``x``; what ``layer(x)`` calls. Every layer defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if self._parameters and args:
            _check_input_dtype(self, args[0])
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        """The arguments shown inside the layer's repr, e.g. ``in_features=4, out_features=2``."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): {mod!r}".replace("\n", "\n  ") for name, mod in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        # as PyTorch: the layer's own settings on the first line inside, then its children
        return f"{type(self).__name__}(\n  " + "\n  ".join(([extra] if extra else []) + lines) \
            + "\n)"

    # ------------------------------------------------------------ parameters
    def children(self):
        """An iterator over the direct sub-modules."""
        return iter(self._modules.values())

    def modules(self):
        return [mod for _, mod in self.named_modules()]

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze every parameter; returns the module, as PyTorch's."""
        for p in self.parameters():
            p.requires_grad = bool(requires_grad)
        return self

    def named_modules(self, prefix: str = ""):
        """(dotted name, module) pairs of this module (name ``prefix``) and every sub-module."""
        yield prefix, self
        for name, mod in self._modules.items():
            yield from mod.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self, prefix: str = ""):
        """(dotted name, Parameter) pairs, own parameters first, each object once."""
        seen = set()
        for mod_name, mod in self.named_modules(prefix):
            for name, p in mod._parameters.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self):
        """Every parameter of this module and its sub-modules, each once, as a list."""
        return [p for _, p in self.named_parameters()]

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Keep ``tensor`` (or None) as state that is saved and moved but not trained
        (BatchNorm's running statistics); ``persistent=False`` leaves it out of state_dict."""
        if "_buffers" not in self.__dict__:
            object.__setattr__(self, "_buffers", {})
        if name in self._parameters or name in self._modules:
            raise KeyError(f"{type(self).__name__}.register_buffer: {name!r} is already a "
                           f"parameter or a sub-module")
        self._buffers[name] = None
        if not persistent:
            object.__setattr__(self, "_transient", self.__dict__.get("_transient", set()) | {name})
        setattr(self, name, tensor)

    def named_buffers(self, prefix: str = "", persistent_only: bool = False):
        """(dotted name, Tensor) pairs of every buffer that is not None."""
        for mod_name, mod in self.named_modules(prefix):
            transient = mod.__dict__.get("_transient", ()) if persistent_only else ()
            for name, b in mod.__dict__.get("_buffers", {}).items():
                if b is not None and name not in transient:
                    yield (f"{mod_name}.{name}" if mod_name else name), b

    def buffers(self):
        return [b for _, b in self.named_buffers()]

    def _state(self) -> dict:
        """name -> Tensor of every parameter and persistent buffer, as state_dict names them."""
        own = dict(self.named_parameters())
        own.update(self.named_buffers(persistent_only=True))
        return own

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None."""
        for p in self.parameters():
            p.grad = None

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """name -> a host NumPy copy of each parameter and persistent buffer."""
        return {name: np.array(p.numpy(), copy=True) for name, p in self._state().items()}

    def load_state_dict(self, state: dict) -> None:
        """Copy ``state`` (name -> array or Tensor) into the parameters, in place.

        Every name must match and every shape agree; otherwise nothing is
        loaded and one ValueError lists all the problems.
        """
        if not isinstance(state, Mapping):
            raise TypeError(
                f"{type(self).__name__}.load_state_dict: state must be a dict of name -> array "
                f"(as model.state_dict() or fnn.load(path)['model'] give), got "
                f"{type(state).__name__}"
            )
        own = self._state()
        missing = [n for n in own if n not in state]
        unexpected = [n for n in state if n not in own]
        mismatched = []
        for name, p in own.items():
            if name in state:
                shape = _shape_of_value(type(self).__name__, name, state[name])
                if shape != p.shape:
                    mismatched.append(f"{name}: checkpoint {shape}, model {p.shape}")
        if missing or unexpected or mismatched:
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            if mismatched:
                parts.append(f"shape mismatches [{'; '.join(mismatched)}]")
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the state dict does not fit this model: "
                + ", ".join(parts) + " (was it saved from another model?)"
            )
        # convert every value before touching any parameter: a value that cannot be
        # converted leaves the model as it was
        converted = {}
        for name, p in own.items():
            value = state[name]
            try:
                host = value.numpy() if isinstance(value, Tensor) else value
                host = host_array("the value", host, p._dtype)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{type(self).__name__}.load_state_dict: {name!r} cannot become "
                    f"{p._dtype.name}: {exc}; nothing was loaded"
                ) from None
            converted[name] = p._device.ops.from_numpy(host, p._device.index)
        for name, p in own.items():
            rebind(p, converted[name])
            if isinstance(p, Parameter):
                p.grad = None

    def to(self, *args, dtype=None, device=None) -> Module:
        """Move/convert every parameter in place (``model.to("cuda")``, ``.to(fnn.float64)``).

        Parameters stay floating point. Every parameter is moved before any is
        replaced, so a move that fails (a dtype the device lacks) changes nothing.
        """
        moved = [(p, p.detach().to(*args, dtype=dtype, device=device)) for p in self.parameters()]
        for _, new in moved:
            if not new._dtype.is_floating:
                raise TypeError(
                    f"{type(self).__name__}.to: parameters must stay floating point, got "
                    f"{new._dtype.name}; nothing was converted"
                )
        for p, new in moved:
            p._data, p._dtype, p._device = new._data, new._dtype, new._device
            p.grad = None
        for buf in self.buffers():  # integer buffers keep their dtype, as in PyTorch
            new = buf.to(*args, dtype=dtype, device=device)
            if not buf._dtype.is_floating:
                new = buf.to(new.device)
            buf._data, buf._dtype, buf._device = new._data, new._dtype, new._device
        return self

    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False``: evaluation) on this module and every sub-module;
        returns self."""
        mode = flag(f"{type(self).__name__}.train", "mode", mode)
        for _, mod in self.named_modules():
            object.__setattr__(mod, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Evaluation mode (Dropout passes its input through): ``train(False)``."""
        return self.train(False)

    # ------------------------------------------------------------ reversible pair
    def reverse(self, x: Tensor, grad_out: Tensor):
        """(dL/dx, {name: dL/dparam}) given dL/dy, for y = self(x), from x alone.

        Derived from the layer's own forward: one forward and backward on a private tape,
        leaving every ``.grad`` as it was. Layers override it only where a hand-written rule
        measured faster (benchmarks/bench_reverse.py). Frozen parameters
        (``requires_grad=False``) get no entry.
        """
        return tape_reverse(self, self.forward, x, grad_out)

    def apply(self, optimizer, self_grads: dict) -> None:
        """One optimizer update of this module's parameters from explicit gradients."""
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


def _shape_of_value(owner: str, name: str, value) -> tuple:
    """The shape of one state-dict value; TypeError/ValueError naming the key for a value
    that has none (None, ragged lists), which np.shape would call () or fail on."""
    if isinstance(value, Tensor):
        return value.shape
    if value is None:
        raise TypeError(f"{owner}.load_state_dict: {name!r} is None; give an array (a state "
                        "dict from model.state_dict() or fnn.load)")
    try:
        return tuple(np.shape(value))
    except ValueError:
        raise ValueError(f"{owner}.load_state_dict: {name!r} is a ragged nested list, not an "
                         "array; nothing was loaded") from None


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
