"""Step capture (``fnn.compile``): ``compile_program`` runs a recorded program as CUDA graphs
(:mod:`fastnn_cuda.graph`, which plans them; :class:`CupyCapture` captures and launches them
with cupy); the fused chains are :mod:`fastnn_cuda.fused_program`."""

from __future__ import annotations

import contextlib

from fastnn.api.hookspec import hookimpl


@hookimpl
def compile_program(program):
    from fastnn_cuda import graph

    return graph.compile_program(program)


class CupyCapture:
    """Stream capture with cupy: a private non-blocking stream and memory pool per program.

    cupy refuses cuBLAS while a stream captures, so the matrix products of a capture go
    to cuBLAS directly (:func:`fastnn_cuda.gemm.capturing`), on this thread's own handle
    bound to the stream and to a workspace from the private pool (kept for the graphs'
    lifetime: their GEMM kernels use it at every replay)."""

    def __init__(self, device_id: int):
        from fastnn_cuda import cublas_lib
        from fastnn_cuda._cupy import cupy as cp

        self.cp, self.device_id = cp, device_id
        with cp.cuda.Device(device_id):
            self.stream = cp.cuda.Stream(non_blocking=True)
            capability = cp.cuda.Device(device_id).compute_capability
        self.pool = cp.cuda.MemoryPool()
        self.workspace = self.empty((cublas_lib.workspace_bytes(capability),), "uint8")

    def capture(self, run, values):
        """(graph, run(values)) with run's work recorded, not executed."""
        from fastnn_cuda import cublas_lib, gemm

        cp = self.cp
        with cp.cuda.Device(self.device_id), cp.cuda.using_allocator(self.pool.malloc), \
                self.stream:
            blas = cublas_lib.handle(self.device_id)  # made and bound before the capture
            blas.bind(self.stream.ptr, self.workspace.data.ptr, self.workspace.nbytes)
            self.stream.begin_capture()
            try:
                with gemm.capturing(blas):
                    result = run(values)
            except BaseException:
                with contextlib.suppress(Exception):
                    self.stream.end_capture()
                raise
            graph = self.stream.end_capture()
        return graph, result

    def launch(self, graph) -> None:
        graph.launch()  # on the current stream: ordered with the plain calls around it

    def empty(self, shape, dtype):
        with self.cp.cuda.Device(self.device_id), self.cp.cuda.using_allocator(
                self.pool.malloc):
            return self.cp.empty(shape, dtype=dtype)

    @staticmethod
    def copy(dst, src) -> None:
        dst[...] = src

    @staticmethod
    def fresh(x):
        return x.copy()

    @staticmethod
    def root(x):
        """What identifies x's memory (shared by its views)."""
        return x.data.mem
