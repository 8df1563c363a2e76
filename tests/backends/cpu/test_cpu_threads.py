"""The NumPy backend from several threads: per-thread work arrays, exact results."""

import threading

import numpy as np
import pytest
from fastnn_cpu import conv_plan, scratch

import fastnn as fnn
from fastnn.conformance import threads
from fastnn.conformance.compare import Mismatch
from tests import thread_scenarios


def test_work_arrays_are_per_thread():
    mine = scratch.zeros("thread_test", (8, 8), np.float32)
    assert scratch.zeros("thread_test", (8, 8), np.float32) is mine  # reused in one thread
    seen = {}

    def other():
        seen["array"] = scratch.zeros("thread_test", (8, 8), np.float32)

    t = threading.Thread(target=other)
    t.start()
    t.join(60)
    assert seen["array"] is not mine
    assert not np.shares_memory(seen["array"], mine)


@pytest.mark.parametrize("scenario", ["adds", "mlp", "conformance"])
def test_threads_get_the_one_thread_results(scenario):
    out = thread_scenarios.run_child("cpu", scenario)
    assert out.returncode == 0, f"exit {out.returncode}:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"


def test_the_conformance_check_catches_work_arrays_shared_by_threads(monkeypatch):
    class Shared:  # one set of work arrays for every thread, as a plain module global
        pass

    monkeypatch.setattr(scratch, "_local", Shared())
    monkeypatch.setattr(conv_plan, "_local", Shared())  # the planned stride-1 convs' arrays
    # NOTE: a race shows only when the threads interleave inside one kernel; on a loaded
    # machine one run can miss it, so the check gets a few runs to catch it
    for _ in range(8):
        try:
            threads.check("conv1d_grads", fnn.Device("cpu"))
        except Mismatch as exc:
            assert "conv1d_grads on cpu from 4 threads" in str(exc)
            return
    pytest.fail("8 runs of the thread check never caught work arrays shared by 4 threads")
