"""The CUDA backend's Python layer from several threads, without a GPU.

Kernel modules compile once however many threads ask first, and the hooks'
own caches (the optimizer step tables) give every thread its own results:
the hooks run with NumPy as cupy and each launch runs the host-built kernel
(launches one at a time: the host shim's thread index is a global).
"""

from __future__ import annotations

import threading
import time

import cupy
import numpy as np
import pytest
from fastnn_cuda import kernels, optim

from fastnn.conformance import threads
from tests.backends.cuda.test_cuda_call_sites_on_host import (  # noqa: F401 (fixtures)
    _dev,
    libs,
    on_host,
)


def test_kernel_modules_compile_once_when_threads_race(monkeypatch):
    built = []

    class SlowModule:  # compiling takes a while, so racing threads overlap
        def __init__(self, code, options):
            built.append(code)
            time.sleep(0.05)

        def get_function(self, name):
            return ("function", name)

    class NoDevice:
        def __init__(self, index):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(cupy, "RawModule", SlowModule)
    monkeypatch.setattr(cupy.cuda, "Device", NoDevice)
    monkeypatch.setattr(kernels, "_functions", {})
    monkeypatch.setattr(kernels, "_modules", {})

    def first_use(device, seed):
        return kernels.function("softmax", "float32", 0)

    got = threads.run_threads(first_use, None, list(range(8)))
    assert len(built) == 1
    assert got == [("function", "softmax_f32")] * 8


SIZES = [(7, 5), (33,), (2, 3, 4)]


def _sgd_run(seed):
    rng = np.random.default_rng(seed)
    params = [_dev(rng.standard_normal(s)) for s in SIZES]
    bufs = [None] * len(SIZES)
    for step in range(10):
        grads = [_dev(rng.standard_normal(s)) for s in SIZES]
        params, bufs = optim.sgd_step(params, grads, bufs, [0.1, 0.05, 0.2], [0.01, 0.0, 0.0],
                                      0.9, 0.0, False, step == 0)
    return [np.asarray(p).copy() for p in params + bufs]


@pytest.mark.usefixtures("on_host")
def test_optimizer_steps_from_threads_match_one_thread(monkeypatch):
    host_function = kernels.function
    one_at_a_time = threading.Lock()

    def serialised(base, dtype, device_id):
        run = host_function(base, dtype, device_id)

        def launch(grid, block, args):
            with one_at_a_time:
                run(grid, block, args)

        return launch

    monkeypatch.setattr(kernels, "function", serialised)
    seeds = [0, 1, 2, 3]
    alone = [_sgd_run(s) for s in seeds]
    def sgd_run(device, seed):
        return _sgd_run(seed)

    together = threads.run_threads(sgd_run, None, seeds)
    threads.compare_results("sgd_step", "cuda hooks on the host", alone, together)
