"""Step capture hooks (``fnn.compile``): a recorded program and its fused chains.

Both are the core's defaults for now: ``compile_program`` is the core's replay
interpreter (a CUDA graph of the whole step, captured with cupy's stream capture, is
the next step and needs a GPU to be measured), and ``fused_elementwise`` evaluates the
expression node by node with this backend's own hooks; it is marked as not fusing, so
the core does not fold chains for this backend (that would only add work).
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl


@hookimpl
def compile_program(program):
    from fastnn.api.program import interpreter

    return interpreter(program)


@hookimpl
def fused_elementwise(expr, inputs):
    from fastnn.api import composite
    from fastnn.api.registry import get_backend

    return composite.fused_elementwise(get_backend("cuda").ops, expr, inputs)


fused_elementwise.fuses = False  # fastnn.api.fusion.planned: no chain folding here
