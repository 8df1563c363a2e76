"""Tensor hooks for the backward pass: ``register_hook``, ``retain_grad`` and
``register_post_accumulate_grad_hook``.

A tensor's hooks live in its ``_hooks`` slot (unset until the first hook, so
making a tensor costs nothing more). :data:`state` counts the hooks registered
and not removed, and the retain_grad calls: while it is 0, ``backward`` takes
its fast path and never looks for them.
"""

from __future__ import annotations

import threading


class _State:
    # hooks registered and not removed, plus retain_grad calls (a retained tensor is
    # not tracked when it dies: the count may stay high, costing speed, never low)
    active = 0


state = _State()
_lock = threading.Lock()
_serial = 0


class Hooks:
    """A tensor's backward hooks (in registration order) and its retain_grad flag."""

    __slots__ = ("fns", "retain", "post")

    def __init__(self):
        self.fns = {}  # handle id -> fn; dicts keep insertion order
        self.retain = False
        self.post = {}  # handle id -> fn(tensor), run after .grad took the gradient


class RemovableHandle:
    """What :func:`register_hook` returns: ``handle.remove()`` unregisters the hook."""

    __slots__ = ("_table", "_key")

    def __init__(self, table: dict, key: int):
        self._table, self._key = table, key

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        if self._table.pop(self._key, None) is not None:
            _count(-1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _hooks_of(tensor) -> Hooks:
    found = getattr(tensor, "_hooks", None)
    if found is None:
        found = tensor._hooks = Hooks()
    return found


def _count(change: int) -> None:
    with _lock:
        state.active += change


def register_hook(tensor, fn) -> RemovableHandle:
    """Call ``fn(grad)`` each time the gradient with respect to ``tensor`` is computed.

    ``fn`` may return a Tensor that replaces the gradient (same shape), or None to
    keep it. On a leaf the hooks run before the gradient is added into ``.grad``.
    """
    if not callable(fn):
        raise TypeError(f"register_hook: fn must be callable, got {type(fn).__name__}")
    if not tensor._requires_grad:
        raise RuntimeError("register_hook: the tensor does not require grad, so no gradient "
                           "will reach it; set requires_grad=True on its leaves first")
    return _add(_hooks_of(tensor).fns, fn)


def register_post_accumulate_grad_hook(tensor, fn) -> RemovableHandle:
    """Call ``fn(tensor)`` each time a backward pass has added a gradient into the
    ``.grad`` of the leaf ``tensor`` (PyTorch's hook of that name); ``fn`` returns None.

    It runs when ``.grad`` holds the new sum, not on ``autograd.grad`` (which leaves
    ``.grad`` alone). Distributed data parallelism uses it to learn which parameters
    a pass reached.
    """
    if not callable(fn):
        raise TypeError(f"register_post_accumulate_grad_hook: fn must be callable, got "
                        f"{type(fn).__name__}")
    if not tensor._requires_grad or tensor._node is not None:
        raise RuntimeError("register_post_accumulate_grad_hook: only a leaf tensor that "
                           "requires grad accumulates a gradient into .grad")
    return _add(_hooks_of(tensor).post, fn)


def _add(table: dict, fn) -> RemovableHandle:
    global _serial
    with _lock:
        _serial += 1
        key = _serial
    table[key] = fn
    _count(1)
    return RemovableHandle(table, key)


def hand_over(tensor, old) -> None:
    """Before an in-place write gives ``tensor`` a new history (``old``: a tensor holding the
    history before it): the hooks registered so far fire on old's gradient, the gradient
    with respect to the value before the write, as PyTorch's; retain_grad stays (it keeps
    the latest value's). Their handles still remove them."""
    found = getattr(tensor, "_hooks", None)
    if found is not None and found.fns:
        moved = old._hooks = Hooks()
        moved.fns, found.fns = found.fns, {}


def retain_grad(tensor) -> None:
    """Keep the gradient of a non-leaf ``tensor`` in its ``.grad`` (a leaf keeps it anyway)."""
    if not tensor._requires_grad:
        raise RuntimeError("retain_grad: the tensor does not require grad, so it has no "
                           "gradient to keep; set requires_grad=True on its leaves first")
    if tensor._node is not None and not retains(tensor):
        _hooks_of(tensor).retain = True
        _count(1)


def run(tensor, grad):
    """``grad`` (a Tensor) after ``tensor``'s hooks, each given the previous one's result."""
    hooks = getattr(tensor, "_hooks", None)
    if hooks is None:
        return grad
    for fn in list(hooks.fns.values()):
        new = fn(grad)
        if new is None:
            continue
        if type(new) is not type(grad) or new.shape != grad.shape or new.dtype != grad.dtype:
            given = (f"shape {new.shape} {new.dtype.name}" if type(new) is type(grad)
                     else type(new).__name__)
            raise TypeError(f"a hook returned {given}; a hook must return None or a Tensor "
                            f"like the gradient (shape {grad.shape} {grad.dtype.name})")
        grad = new
    return grad


def retains(tensor) -> bool:
    """Whether ``retain_grad`` was called on ``tensor``."""
    hooks = getattr(tensor, "_hooks", None)
    return hooks is not None and hooks.retain


def run_post(tensor) -> None:
    """Run ``tensor``'s post-accumulate-grad hooks (its ``.grad`` holds the new sum)."""
    hooks = getattr(tensor, "_hooks", None)
    if hooks is not None:
        for fn in list(hooks.post.values()):
            fn(tensor)
