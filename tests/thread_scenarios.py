"""Thread scenarios for the backend tests, run in a child process (a crash fails one test).

``python -m tests.thread_scenarios DEVICE SCENARIO`` exits 0 when the scenario
gives exactly the one-thread results; a wrong result raises (exit 1), a
crash in the backend kills only the child (a signal), and the parent's
timeout catches a deadlock. Scenarios:

- ``adds``: the issue's first report: two threads, each adding 1 into its own
  tensor 2500 times, must both end at exactly 2500;
- ``mlp``: two threads each train their own ``nn.Sequential`` MLP with
  ``optim.SGD`` and must get the one-thread losses and weights bit for bit;
- ``conformance``: every workload of :mod:`fastnn.conformance.threads`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import fastnn as fnn
from fastnn.conformance import threads

TIMEOUT_S = 600


def adds(device, seed):
    x = fnn.zeros((64,), dtype=fnn.float32, device=device)
    one = fnn.ones((64,), dtype=fnn.float32, device=device)
    for _ in range(2500):
        x = x + one
    return [x.numpy()]


def mlp(device, seed):
    return threads.mlp_sgd(device, seed, widths=(64, 128, 128, 4), batch=128, steps=60)


def main(device_name: str, scenario: str) -> None:
    device = fnn.Device(device_name)
    if scenario == "conformance":
        for name in threads.WORKLOADS:
            threads.check(name, device)
        return
    work = {"adds": adds, "mlp": mlp}[scenario]
    seeds = [0, 1]
    alone = [work(device, s) for s in seeds]
    if scenario == "adds":
        assert all(np.array_equal(a[0], np.full(64, 2500, np.float32)) for a in alone)
    for _ in range(threads.ROUNDS):
        threads.compare_results(scenario, device, alone, threads.run_threads(work, device, seeds))


def run_child(device_name: str, scenario: str) -> subprocess.CompletedProcess:
    """The scenario in a child process (timeout: :data:`TIMEOUT_S`), with one BLAS thread:
    two Python threads each driving a 2-thread OpenBLAS on 2 cores spin against each
    other (the cpu MLP took 7.5 s instead of 1); the races looked for are fastnn's own."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "tests.thread_scenarios", device_name, scenario],
                          capture_output=True, text=True, timeout=TIMEOUT_S, env=env)


if __name__ == "__main__":
    main(*sys.argv[1:])
