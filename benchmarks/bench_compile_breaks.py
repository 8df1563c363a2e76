"""Graph breaks (issue 23): a step that reads its loss mid-step, eager, split, and fully
captured side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_compile_breaks.py [--backends cpu]
        [--models mlp,conv1d,lstm] [--steps 40]

Per model and backend, the median step time of: eager; ``fnn.compile(fullgraph=False)``
of a step that adds ``loss.item()`` to a running total between forward and backward (a
graph break: two segments, the Python kept); and ``fnn.compile`` of the same step with
the read moved after the call (fully captured). Host time as in bench_compile.py: the
step's time minus the time inside the backend's hooks (the segment programs' calls
count as inside). All three must end with the same weights bit for bit.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from bench_compile import BATCH, CLASSES, TimedOps, model_and_input

import fastnn as fnn
import fastnn.functional as F
from fastnn import optim
from fastnn.api.device import as_device


def setup(name, backend, mode):
    """(the step as a function of nothing, the model, the running total's holder)."""
    rng = np.random.default_rng(0)
    fnn.manual_seed(0)
    model, host_x = model_and_input(name, rng)
    model = model.to(backend)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = fnn.tensor(host_x.astype(np.float32), device=backend)
    y = fnn.tensor(rng.integers(0, CLASSES, BATCH), device=backend)
    seen = {"total": 0.0}

    def split_step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        seen["total"] += loss.item()  # the graph break
        loss.backward()
        opt.step()
        return loss

    def whole_step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    if mode == "eager":
        return (lambda: split_step(x, y)), model, seen
    if mode == "split":
        compiled = fnn.compile(split_step, fullgraph=False)
        return (lambda: compiled(x, y)), model, seen
    compiled = fnn.compile(whole_step)

    def whole():
        seen["total"] += compiled(x, y).item()  # the same read, outside the compiled step
    return whole, model, seen


MODES = ("eager", "split", "whole")


def run(name, backend, steps, warmup=3):
    """Per mode: (median step seconds, median host seconds); whether all three ended
    equal. The modes take turns step by step, so a busy machine slows them alike."""
    runs = {mode: setup(name, backend, mode) for mode in MODES}
    device = as_device(backend)
    timed = TimedOps(device.ops)
    device.ops = timed
    totals = {mode: [] for mode in MODES}
    hosts = {mode: [] for mode in MODES}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n in range(warmup + steps):
                for mode in MODES:
                    timed.inside = 0.0
                    start = time.perf_counter()
                    runs[mode][0]()
                    elapsed = time.perf_counter() - start
                    if n >= warmup:
                        totals[mode].append(elapsed)
                        hosts[mode].append(elapsed - timed.inside)
    finally:
        device.ops = timed._inner
    weights = [[np.asarray(v) for v in runs[m][1].state_dict().values()] for m in MODES]
    same = len({runs[m][2]["total"] for m in MODES}) == 1 and all(
        np.array_equal(a, b) for other in weights[1:] for a, b in zip(weights[0], other))
    return {m: (float(np.median(totals[m])), float(np.median(hosts[m]))) for m in MODES}, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cpu")
    parser.add_argument("--models", default="mlp,conv1d,lstm")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    print(f"{'model':12} {'backend':8} {'eager ms':>9} {'split ms':>9} {'whole ms':>9} "
          f"{'split/eager':>11} {'whole/eager':>11} {'host e/s/w ms':>20}  equal")
    for backend in args.backends.split(","):
        for name in args.models.split(","):
            times, same = run(name, backend, args.steps)
            (e, eh), (s, sh), (c, ch) = (times[m] for m in MODES)
            print(f"{name:12} {backend:8} {e * 1e3:9.3f} {s * 1e3:9.3f} {c * 1e3:9.3f} "
                  f"{s / e:11.2f} {c / e:11.2f} "
                  f"{eh * 1e3:6.2f}/{sh * 1e3:6.2f}/{ch * 1e3:6.2f}  {same}")


if __name__ == "__main__":
    main()
