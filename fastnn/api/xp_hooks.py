"""The hooks that are one call of a NumPy-like array module, as one table.

A backend whose arrays follow NumPy's API (NumPy itself, cupy, dpnp, ...) gets
them in one line instead of a function per hook, in the spirit of Chainer's
``xp``::

    from fastnn.api.xp_hooks import xp_hooks
    globals().update(xp_hooks(numpy, ["neg", "exp", "add", "matmul"]))

Each generated function takes the hook specification's arguments by their
names (``x``; ``a, b``; ``x, axes``; ``x, shape``) and is marked as an
implementation, so pluggy registers it like a written one. ``wrap(fn)`` may
replace each array-module function first (to silence floating-point warnings,
say). ``xp`` may also be a function returning the module, looked up at every
call (~0.1 us), for a backend whose tests swap its array module (cuda's host
stand-ins run its hooks on NumPy). A hook with more to it than one call
(``log`` with NumPy's warnings silenced, ``where`` with a fast path) stays
written out in its backend.
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl

UNARY = {"neg": "negative", "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "abs",
         "tanh": "tanh", "floor": "floor", "sin": "sin", "cos": "cos"}
"""Hook ``(x)`` -> the array module's function of the same meaning."""
BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
          "maximum": "maximum", "minimum": "minimum", "greater": "greater", "less": "less",
          "equal": "equal", "floor_divide": "floor_divide", "bitwise_and": "bitwise_and",
          "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "matmul": "matmul"}
"""Hook ``(a, b)`` -> the array module's function (NumPy broadcasting, Python scalars
taking the array's dtype)."""
SHAPED = {"transpose": ("transpose", "axes"), "broadcast_to": ("broadcast_to", "shape")}
"""Hook ``(x, <second argument>)`` -> (the array module's function, that argument's name)."""


def _unary(fn):
    def hook(x):
        return fn(x)
    return hook


def _binary(fn):
    def hook(a, b):
        return fn(a, b)
    return hook


def _with_axes(fn):
    def hook(x, axes):
        return fn(x, axes)
    return hook


def _with_shape(fn):
    def hook(x, shape):
        return fn(x, shape)
    return hook


_MAKERS = {"axes": _with_axes, "shape": _with_shape}


def _late(get_xp, attr: str):
    def call(*args):
        return getattr(get_xp(), attr)(*args)
    return call


def xp_hooks(xp, names, wrap=None) -> dict:
    """``{hook name: implementation}`` for ``names`` (each a key of :data:`UNARY`,
    :data:`BINARY` or :data:`SHAPED`) on the array module ``xp``."""
    out = {}
    for name in names:
        if name in UNARY:
            attr, make = UNARY[name], _unary
        elif name in BINARY:
            attr, make = BINARY[name], _binary
        elif name in SHAPED:
            attr, arg = SHAPED[name]
            make = _MAKERS[arg]
        else:
            known = sorted(UNARY) + sorted(BINARY) + sorted(SHAPED)
            raise KeyError(f"xp_hooks: {name!r} is not a one-call hook; known: "
                           f"{', '.join(known)}")
        fn = _late(xp, attr) if callable(xp) and not hasattr(xp, attr) else getattr(xp, attr)
        hook = make(wrap(fn) if wrap is not None else fn)
        hook.__name__ = hook.__qualname__ = name
        hook.__doc__ = f"{name} as {getattr(xp, '__name__', 'xp')}.{attr}."
        out[name] = hookimpl(hook)
    return out
