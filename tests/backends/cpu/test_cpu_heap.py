"""fastnn_cpu.heap: with the cpu backend loaded, arrays of a step's sizes freed and made
again reuse mapped memory (no page faults), on glibc."""

import resource

import fastnn_cpu.heap as heap
import numpy as np
import pytest

import fastnn as fnn


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@pytest.mark.skipif(not heap.keep_freed_memory(), reason="needs glibc's mallopt")
def test_a_freed_array_s_memory_serves_the_next_without_page_faults():
    fnn.zeros(1)  # the backend loaded
    assert heap.APPLIED[0]
    size = 3 * 2**20 // 8  # 3 MiB: above glibc's default mmap threshold

    def step():  # a step's arrays: made, written whole (every page touched), freed
        arrays = [np.ones(size) for _ in range(4)]
        del arrays
    for _ in range(3):
        step()
    before = _faults()
    for _ in range(20):
        step()
    faults = _faults() - before
    # with glibc's own thresholds the freed top of the heap goes back to the system at
    # the end of each step: ~3,000 faults a step (60,800 in all, measured)
    assert faults < 2000, faults


def test_it_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("FASTNN_CPU_HEAP", "0")
    assert heap.keep_freed_memory() is False


@pytest.mark.parametrize("name", ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
def test_glibc_s_own_variables_win(monkeypatch, name):
    monkeypatch.delenv("FASTNN_CPU_HEAP", raising=False)
    monkeypatch.setenv(name, "131072")
    assert heap.keep_freed_memory() is False
