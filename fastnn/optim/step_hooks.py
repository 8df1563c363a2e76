"""Optimizer step hooks, as PyTorch's: ``opt.register_step_pre_hook(hook)`` and
``opt.register_step_post_hook(hook)``, each called as ``hook(optimizer, args, kwargs)``
around every ``step()``, ``args`` starting with the optimizer itself as PyTorch's (a
pre-hook may return ``(new_args, new_kwargs)`` for the step to take), each returning
a handle whose ``remove()`` unregisters it. EMA and logging libraries use them.

Every optimizer's ``step`` is wrapped once, when its class is made
(:func:`with_step_hooks`): without hooks a step pays two dict lookups and marks itself
taken (for the schedulers' "step before optimizer.step()" warning); a ``step`` that
calls ``super().step()`` runs the hooks once, at the outer call."""

from __future__ import annotations

import functools

from fastnn.nn.hooks import RemovableHandle


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


def _register(optimizer, name: str, hook) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"{type(optimizer).__name__}.{name[1:-1]}: hook must be callable, got "
                        f"{type(hook).__name__}")
    hooks = _table(optimizer, name)
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


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
