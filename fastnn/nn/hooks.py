"""Module hooks, as PyTorch's: forward pre-hooks, forward hooks and full backward (pre-)
hooks.

``module(*args)`` with hooks registered runs, in PyTorch's order::

    pre-hooks:       args = hook(module, args) or args          (registration order)
    forward:         out = module.forward(*args)
    forward hooks:   out = hook(module, args, out) or out
    backward pre-hooks: on the tape, grad_output = hook(module, grad_output) or
                     grad_output, as the gradient w.r.t. the output arrives (what they
                     return is what flows into the module's backward)
    backward hooks:  on the tape, grad_input = hook(module, grad_input, grad_output)
                     or grad_input, once the gradient w.r.t. the module's input is known

Each ``register_*`` returns a :class:`RemovableHandle`. A module without hooks pays one
attribute test per call.

Full backward hooks ride on the tape: the module's tensor input and output are passed
through identity ops (``call_hook``) whose backward hands the gradient to this module.
The output's records ``grad_output``; the input's calls the hooks with ``grad_input`` and
passes on what they return. When the input needs no gradient, the hooks are called from
the output's, with ``grad_input = (None,)``, as PyTorch does. They are implemented for
modules with one tensor input and one tensor output (every layer's ``forward(x)``); a
module called with more raises a TypeError naming it.
"""

from __future__ import annotations

import itertools

from fastnn.autograd import engine, grad_mode
from fastnn.autograd import hooks as tensor_hooks
from fastnn.ops.tensor import Tensor

_ids = itertools.count()


class RemovableHandle(tensor_hooks.RemovableHandle):
    """What a module's or an optimizer's ``register_*_hook`` returns: ``handle.remove()``
    unregisters the hook (also as a context manager: ``with
    module.register_forward_hook(f): ...``). One type with the tensors' handles
    (``fastnn.utils.hooks.RemovableHandle``), as in PyTorch."""

    __slots__ = ("id", "_dicts")

    def __init__(self, *hook_dicts):
        self.id = next(_ids)
        self._dicts = hook_dicts

    def remove(self) -> None:
        """Unregister the hook; removing twice does nothing."""
        for table in self._dicts:
            table.pop(self.id, None)


def _register(hooks: dict, hook, prepend: bool, owner: str, extra: dict | None = None,
              with_kwargs: bool = False):
    """Add ``hook`` to ``hooks`` (first with ``prepend``); ``extra`` is the dict that marks
    hooks taking kwargs, set for this one with ``with_kwargs``."""
    if not callable(hook):
        raise TypeError(f"{owner}: hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(hooks, *([extra] if extra is not None else []))
    hooks[handle.id] = hook
    if with_kwargs:
        extra[handle.id] = True
    if prepend:  # dicts keep insertion order: move the new hook to the front
        for key in [k for k in hooks if k != handle.id]:
            hooks[key] = hooks.pop(key)
    return handle


class HooksMixin:
    """The ``register_*_hook`` methods of :class:`~fastnn.nn.Module`."""

    def _init_hooks(self) -> None:
        object.__setattr__(self, "_forward_pre_hooks", {})
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", {})
        object.__setattr__(self, "_forward_hooks", {})
        object.__setattr__(self, "_forward_hooks_with_kwargs", {})
        object.__setattr__(self, "_backward_hooks", {})
        object.__setattr__(self, "_backward_pre_hooks", {})

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before each forward; a return value other than None
        replaces ``args`` (a non-tuple becomes a 1-tuple). ``with_kwargs=True``:
        ``hook(module, args, kwargs)`` returning None or a new ``(args, kwargs)``.
        ``prepend=True`` runs it before the hooks registered earlier."""
        owner = f"{type(self).__name__}.register_forward_pre_hook"
        return _register(self._forward_pre_hooks, hook, prepend, owner,
                         self._forward_pre_hooks_with_kwargs, with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each forward; a return value other than
        None replaces the output. ``with_kwargs=True``: ``hook(module, args, kwargs,
        output)``. ``prepend=True`` runs it before the hooks registered earlier."""
        owner = f"{type(self).__name__}.register_forward_hook"
        return _register(self._forward_hooks, hook, prepend, owner,
                         self._forward_hooks_with_kwargs, with_kwargs)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` during backward, with 1-tuples of
        the gradients w.r.t. the module's tensor input (None where it needs none) and
        output; a return value other than None replaces ``grad_input``. For modules
        called with one tensor input returning one tensor (see :mod:`fastnn.nn.hooks`)."""
        owner = f"{type(self).__name__}.register_full_backward_hook"
        return _register(self._backward_hooks, hook, prepend, owner)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` during backward as the gradient w.r.t. the
        module's output arrives, before the module's own backward; a return value other
        than None replaces ``grad_output`` (a 1-tuple) and is what flows on, as PyTorch's."""
        owner = f"{type(self).__name__}.register_full_backward_pre_hook"
        return _register(self._backward_pre_hooks, hook, prepend, owner)


def has_hooks(module) -> bool:
    """True when ``module`` has any forward, pre-forward or backward hook."""
    return bool(module._forward_pre_hooks or module._forward_hooks or module._backward_hooks
                or module._backward_pre_hooks)


def call_with_hooks(module, forward, args: tuple, kwargs: dict):
    """``forward(*args, **kwargs)`` wrapped in ``module``'s hooks, in PyTorch's order."""
    with_kwargs = module._forward_pre_hooks_with_kwargs
    for key, hook in list(module._forward_pre_hooks.items()):
        if key in with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise TypeError(f"{type(module).__name__}: a forward pre-hook with "
                                    f"with_kwargs=True must return None or (args, kwargs), got "
                                    f"{type(result).__name__}")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    backward = None
    if (module._backward_hooks or module._backward_pre_hooks) and grad_mode.is_grad_enabled():
        backward = _BackwardHooks(module)
        args = backward.wrap_input(args, kwargs)
    out = forward(*args, **kwargs)
    with_kwargs = module._forward_hooks_with_kwargs
    for key, hook in list(module._forward_hooks.items()):
        result = (hook(module, args, kwargs, out) if key in with_kwargs
                  else hook(module, args, out))
        if result is not None:
            out = result
    if backward is not None:
        out = backward.wrap_output(out)
    return out


def _identity(x: Tensor, on_grad) -> Tensor:
    """``x`` again, as a new tape node whose backward calls ``on_grad(grad)`` (the raw
    gradient array) and passes on what it returns (None: the gradient unchanged)."""
    out = Tensor._make(x._data, x._dtype, x._device)
    return engine.attach(out, "call_hook", (x,), (), on_grad)


class _BackwardHooks:
    """One forward call's link to the tape: collects grad_output, then calls the hooks."""

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.input_needs_grad = False

    def _refuse(self, what: str):
        name = type(self.module).__name__
        raise TypeError(
            f"{name}: full backward (pre-)hooks support modules called with one tensor "
            f"input that return one tensor; this call {what}. Hook the submodules that "
            f"take one tensor instead, or use x.register_hook on the tensors themselves"
        )

    def wrap_input(self, args: tuple, kwargs: dict) -> tuple:
        found = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        keyword = [k for k, v in kwargs.items() if isinstance(v, Tensor)]
        if len(found) != 1 or keyword:
            self._refuse(f"passed {len(found) + len(keyword)} tensors")
        index = found[0]
        x = args[index]
        if not x._requires_grad or not self.module._backward_hooks:
            return args
        self.input_needs_grad = True
        meta = (x._dtype, x._device)

        def on_input_grad(grad):
            grad_input = self._call((Tensor._make(grad, *meta),))
            return None if grad_input[0] is None else grad_input[0]._data

        return args[:index] + (_identity(x, on_input_grad),) + args[index + 1:]

    def wrap_output(self, out):
        if not isinstance(out, Tensor):
            self._refuse(f"returned a {type(out).__name__}")
        if not out._requires_grad:  # nothing flows back through this call
            return out
        meta = (out._dtype, out._device)

        def on_output_grad(grad):
            arrived = (Tensor._make(grad, *meta),)
            self.grad_output = self._pre(arrived)
            changed = self.grad_output[0]
            if not self.input_needs_grad and self.module._backward_hooks:
                self._call((None,))
            return None if changed is arrived[0] else changed._data

        return _identity(out, on_output_grad)

    def _pre(self, grad_output: tuple) -> tuple:
        module = self.module
        for hook in list(module._backward_pre_hooks.values()):
            result = hook(module, grad_output)
            if result is not None:
                grad_output = _checked_grads(module, "full backward pre-hook", result,
                                             "grad_output", grad_output[0])
        return grad_output

    def _call(self, grad_input: tuple) -> tuple:
        module = self.module
        grad_output = self.grad_output or (None,)
        for hook in list(module._backward_hooks.values()):
            result = hook(module, grad_input, grad_output)
            if result is not None:
                grad_input = _checked_grads(module, "full backward hook", result, "grad_input",
                                            grad_input[0])
        self.grad_output = None
        return grad_input


def _checked_grads(module, what: str, result, name: str, old) -> tuple:
    """A hook's replacement for the 1-tuple ``(old,)`` (``name``: grad_input or
    grad_output): one of the same shape, dtype and device, or a clear error."""
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != 1 or (old is not None and not (
            isinstance(result[0], Tensor) and result[0].shape == old.shape
            and result[0]._dtype is old._dtype and result[0]._device == old._device)):
        want = "(None,)" if old is None else (
            f"({name},) with one {old._dtype.name} Tensor of shape {old.shape} on "
            f"{old._device}")
        raise ValueError(f"{type(module).__name__}: a {what} must return None or {want}, got "
                         f"{result!r:.200}")
    return result
