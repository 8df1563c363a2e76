"""Optimizer step hooks, as PyTorch's: ``opt.register_step_pre_hook(hook)`` and
``opt.register_step_post_hook(hook)``, each called as ``hook(optimizer, args, kwargs)``
around every ``step()``, ``args`` starting with the optimizer itself as PyTorch's (a
pre-hook may return ``(new_args, new_kwargs)`` for the step to take), each returning
a handle whose ``remove()`` unregisters it. EMA and logging libraries use them. The
state-dict hooks are PyTorch's too: ``register_state_dict_pre_hook(hook)`` (``hook(opt)``),
``register_state_dict_post_hook`` (``hook(opt, state_dict)``, may return a replacement),
``register_load_state_dict_pre_hook`` (``hook(opt, state_dict)``, likewise) and
``register_load_state_dict_post_hook`` (``hook(opt)``), each with ``prepend=``.

Every optimizer's ``step`` is wrapped once, when its class is made
(:func:`with_step_hooks`): without hooks a step pays two dict lookups and marks itself
taken (for the schedulers' "step before optimizer.step()" warning); a ``step`` that
calls ``super().step()`` runs the hooks once, at the outer call."""

from __future__ import annotations

import functools

from fastnn.nn.hooks import RemovableHandle
from fastnn.nn.hooks import _register as register_hook


def _table(optimizer, name: str) -> dict:
    found = optimizer.__dict__.get(name)
    if found is None:
        found = optimizer.__dict__[name] = {}
    return found


class StepHooks:
    """The registration methods (a mixin of :class:`fastnn.optim.optimizer.Optimizer`)."""

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``; it may return
        ``(new_args, new_kwargs)`` for the step to take instead."""
        return _register(self, "_step_pre_hooks", hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return _register(self, "_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` before ``state_dict()`` builds the state."""
        return _register(self, "_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` after ``state_dict()``; a dict it returns is
        what ``state_dict()`` returns instead."""
        return _register(self, "_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` before ``load_state_dict``; a dict it returns
        is loaded instead."""
        return _register(self, "_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook,
                                           prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` after ``load_state_dict``."""
        return _register(self, "_load_state_dict_post_hooks", hook, prepend)


def _register(optimizer, name: str, hook, prepend: bool = False) -> RemovableHandle:
    owner = f"{type(optimizer).__name__}.{name[1:-1]}"
    return register_hook(_table(optimizer, name), hook, prepend, owner)


def _run(optimizer, name: str, *args):
    """Each hook of ``name`` in turn; the last non-None result (a replaced state dict)."""
    found = None
    for hook in list(optimizer.__dict__.get(name, {}).values()):
        result = hook(optimizer, *args)
        if result is not None:
            found = result
            if args:
                args = (result,)
    return found


def with_state_dict_hooks(fn):
    """``fn`` (an optimizer's ``state_dict``) running the state-dict hooks around it, once
    (an override that calls ``super().state_dict()`` runs them at the outer call)."""
    if getattr(fn, "runs_state_dict_hooks", False):
        return fn

    @functools.wraps(fn)
    def state_dict(self):
        own = self.__dict__
        if own.get("_in_state_dict"):
            return fn(self)
        own["_in_state_dict"] = True
        try:
            _run(self, "_state_dict_pre_hooks")
            out = fn(self)
            replaced = _run(self, "_state_dict_post_hooks", out)
            return out if replaced is None else replaced
        finally:
            own["_in_state_dict"] = False

    state_dict.runs_state_dict_hooks = True
    return state_dict


def with_load_hooks(fn):
    """``fn`` (an optimizer's ``load_state_dict``) running the load hooks around it, once."""
    if getattr(fn, "runs_state_dict_hooks", False):
        return fn

    @functools.wraps(fn)
    def load_state_dict(self, state_dict):
        own = self.__dict__
        if own.get("_in_load"):
            return fn(self, state_dict)
        own["_in_load"] = True
        try:
            replaced = _run(self, "_load_state_dict_pre_hooks", state_dict)
            fn(self, state_dict if replaced is None else replaced)
            _run(self, "_load_state_dict_post_hooks")
        finally:
            own["_in_load"] = False

    load_state_dict.runs_state_dict_hooks = True
    return load_state_dict


def with_step_hooks(fn):
    """``fn`` (an optimizer's ``step``) running the instance's step hooks around it."""
    if getattr(fn, "runs_step_hooks", False):
        return fn

    @functools.wraps(fn)
    def step(self, *args, **kwargs):
        own = self.__dict__
        own["_opt_called"] = True  # (a scheduler stepped before this warns, as PyTorch's)
        pre, post = own.get("_step_pre_hooks"), own.get("_step_post_hooks")
        if not (pre or post) or own.get("_in_step"):
            return fn(self, *args, **kwargs)
        own["_in_step"] = True
        args = (self,) + args  # (as PyTorch's: the hooks see step's whole arguments)
        try:
            for hook in list(pre.values()) if pre else ():
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"optimizer pre hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result!r}")
                    args, kwargs = result
            out = fn(*args, **kwargs)
            for hook in list(post.values()) if post else ():
                hook(self, args, kwargs)
            return out
        finally:
            own["_in_step"] = False

    step.runs_step_hooks = True
    return step
