"""Thread safety: threads with their own tensors get exactly the one-thread results."""

import pytest

from fastnn.conformance import threads


@pytest.mark.conformance_row("threads")
@pytest.mark.parametrize("workload", list(threads.WORKLOADS))
def test_threads_match_one_thread(device, workload):
    threads.check(workload, device)
