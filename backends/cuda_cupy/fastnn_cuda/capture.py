"""Step capture (``fnn.compile``): ``compile_program`` runs a recorded program as CUDA graphs
(:mod:`fastnn_cuda.graph`); the fused chains are :mod:`fastnn_cuda.fused_program`."""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl


@hookimpl
def compile_program(program):
    from fastnn_cuda import graph

    return graph.compile_program(program)
