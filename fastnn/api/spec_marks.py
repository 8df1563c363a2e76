"""The marks of the hook specification: pluggy's markers and the two roles of a hook.

Kept apart so that the spec's two modules (:mod:`fastnn.api.hookspec`, the primitives,
and :mod:`fastnn.api.hookspec_ops`, the optional ops) share them without importing
each other.
"""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "fastnn"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


def primitive(spec):
    """Mark ``spec`` as a required primitive: every backend implements it."""
    spec.fastnn_role = "primitive"
    return hookspec(firstresult=True)(spec)


def op(spec):
    """Mark ``spec`` as an optional op: the core composes it from primitives
    (:mod:`fastnn.api.composite`, a function of the same name) unless the backend
    implements it, which it does only for speed or precision."""
    spec.fastnn_role = "op"
    return hookspec(firstresult=True)(spec)


Array = Any
Shape = tuple[int, ...]
Axes = tuple[int, ...] | None
