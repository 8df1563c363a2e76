"""``fastnn.compiler``, the part of ``torch.compiler`` that model code calls: whether a
step is being captured (``is_compiling``), and the decorators that steer a compiler.

fastnn's ``fnn.compile`` captures the backend calls a step makes, not its Python, so the
steering decorators have nothing to steer: ``disable``, ``allow_in_graph`` and
``assume_constant_result`` return the function unchanged (its calls are captured like any
others, and give what they give eagerly; a data-dependent branch inside it is a graph
break as anywhere else). ``compile`` is :func:`fastnn.compile`.
"""

from __future__ import annotations

from fastnn.api.program_calls import recording
from fastnn.capture import compile  # noqa: A004  (torch.compiler.compile)

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "disable", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "list_backends", "reset"]


def is_compiling() -> bool:
    """True while ``fnn.compile`` records a step (code may skip a host read-back then)."""
    return recording()


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    """False: fastnn exports no graphs."""
    return False


def _unchanged(name: str):
    def decorator(fn=None, *args, **kwargs):
        if fn is None:  # used as @torch.compiler.disable(recursive=False)
            return lambda f: f
        return fn

    decorator.__name__ = decorator.__qualname__ = name
    decorator.__doc__ = (f"``torch.compiler.{name}``: the function unchanged (fnn.compile "
                         f"captures backend calls, not Python; see the module).")
    return decorator


disable = _unchanged("disable")
allow_in_graph = _unchanged("allow_in_graph")
assume_constant_result = _unchanged("assume_constant_result")


def reset() -> None:
    """Nothing to reset: each ``fnn.compile`` object keeps its own programs (drop the object
    to forget them)."""


def list_backends(exclude_tags=None) -> list:
    """The one way fastnn compiles: ``["fastnn"]``."""
    return ["fastnn"]
