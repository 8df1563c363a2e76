"""OpenCL from several threads: per-thread kernel objects, shared programs, exact results.

A pyopencl.Kernel holds its arguments between set_args and the enqueue, so one
object shared by two threads launched one thread's kernel with the other's
buffers: two threads adding into their own tensors ended at 2498 instead of
2500, and two threads training their own MLPs crashed PoCL. The scenarios run
in a child process, so a crash fails the test instead of ending the run.
"""

import threading

import numpy as np
import pytest

from fastnn.conformance import threads
from tests import thread_scenarios


def test_each_thread_has_its_own_kernel_objects_from_one_program(ocl):
    dev = ocl.runtime.state(0)
    args = ("misc.cl", "k_fill", (("T", "float"),), [None, np.int32, np.float32])
    mine = dev.kernel(*args)
    assert dev.kernel(*args) is mine  # cached within the thread
    seen = {}

    def other():
        seen["kernel"] = dev.kernel(*args)
        seen["program"] = dev.program("misc.cl", (("T", "float"),))

    t = threading.Thread(target=other)
    t.start()
    t.join(60)
    assert seen["kernel"] is not mine
    assert seen["program"] is dev.program("misc.cl", (("T", "float"),))  # compiled once


def test_programs_build_once_when_threads_race(ocl, monkeypatch):
    dev = ocl.runtime.state(0)
    built = []
    real = ocl.runtime.cl().Program

    def counting(context, text):
        built.append(1)
        return real(context, text)

    monkeypatch.setattr(ocl.runtime.cl(), "Program", counting)
    defines = (("T", "float"), ("RACE_TEST", len(dev._programs)))  # a key nobody built

    def first_use(device, seed):
        return dev.program("misc.cl", defines)

    programs = threads.run_threads(first_use, None, [0, 1, 2, 3])
    assert len(built) == 1
    assert all(p is programs[0] for p in programs)


@pytest.mark.parametrize("scenario", ["adds", "mlp",
                                      pytest.param("conformance", marks=pytest.mark.slow)])
def test_threads_get_the_one_thread_results(ocl, scenario):
    out = thread_scenarios.run_child("opencl", scenario)
    assert out.returncode == 0, f"exit {out.returncode}:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
