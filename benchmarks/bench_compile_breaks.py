"""Graph breaks (issue 23): a step that reads its loss mid-step, eager, split, and fully
captured side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_compile_breaks.py [--backends cpu]
        [--models mlp,conv1d,lstm] [--steps 40] [--breaks 1,2] [--clock cpu]

Per model and backend, the median step time of: eager; ``fnn.compile(fullgraph=False)``
of a step that adds ``loss.item()`` to a running total between forward and backward (a
graph break: two segments, the Python kept; ``--breaks 2``: ``if loss.item() > x:`` in
the middle and a ``.tolist()`` of the logits for logging at the end, three segments)
as fastnn chooses to run it ("split"), and with every segment program run ahead of the
Python (``fastnn.capture.split.AHEAD = "always"``: "ahead"); and ``fnn.compile`` of the
same step with the reads moved after the call (fully captured). Host time as in
bench_compile.py: the step's time minus the time inside the backend's hooks (the segment
programs' calls count as inside). All must end with the same weights and values read,
bit for bit. ``--clock cpu`` times the process's CPU time (on a shared machine).
``--bare`` times without the timing wrapper (no host columns): a backend's own
``compile_program`` (opencl's launch list) falls back to the interpreter on a wrapped
table, so there "split" would measure the call run as the eager one.
"""

from __future__ import annotations

import argparse
import time
import warnings

import bench_compile
import numpy as np
from bench_compile import BATCH, CLASSES, TimedOps, model_and_input

import fastnn as fnn
import fastnn.functional as F
from fastnn import optim
from fastnn.api.device import as_device
from fastnn.capture import split as splits


def setup(name, backend, mode, breaks=1):
    """(the step as a function of nothing, the model, the running total's holder)."""
    rng = np.random.default_rng(0)
    fnn.manual_seed(0)
    model, host_x = model_and_input(name, rng)
    model = model.to(backend)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = fnn.tensor(host_x.astype(np.float32), device=backend)
    y = fnn.tensor(rng.integers(0, CLASSES, BATCH), device=backend)
    seen = {"total": 0.0, "log": None}

    def one_break(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        seen["total"] += loss.item()  # the graph break
        loss.backward()
        opt.step()
        return loss

    def two_breaks(xb, yb):
        opt.zero_grad()
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        if loss.item() > 1e6:  # a graph break: a branch on a value (never taken here)
            loss = loss * 0.0
        loss.backward()
        opt.step()
        seen["log"] = out[0].tolist()  # another: logging
        return loss

    def whole_step(xb, yb):
        opt.zero_grad()
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        return loss, out

    split_step = one_break if breaks == 1 else two_breaks
    if mode == "eager":
        return (lambda: split_step(x, y)), model, seen
    if mode in ("split", "ahead"):
        compiled = fnn.compile(split_step, fullgraph=False)
        if mode == "split":
            return (lambda: compiled(x, y)), model, seen

        def ahead():
            was, splits.AHEAD = splits.AHEAD, "always"
            try:
                return compiled(x, y)
            finally:
                splits.AHEAD = was
        return ahead, model, seen
    compiled = fnn.compile(whole_step)

    def whole():
        loss, out = compiled(x, y)  # the same reads, outside the compiled step
        if breaks == 1:
            seen["total"] += loss.item()
        else:
            loss.item()
            seen["log"] = out[0].tolist()
    return whole, model, seen


MODES = ("eager", "split", "ahead", "whole")


def run(name, backend, steps, breaks=1, warmup=3, bare=False):
    """Per mode: (median step seconds, median host seconds); whether all ended equal.
    The modes take turns step by step, so a busy machine slows them alike."""
    runs = {mode: setup(name, backend, mode, breaks) for mode in MODES}
    clock = bench_compile.CLOCK[0]
    device = as_device(backend)
    timed = TimedOps(device.ops)
    if not bare:
        device.ops = timed
    totals = {mode: [] for mode in MODES}
    hosts = {mode: [] for mode in MODES}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n in range(warmup + steps):
                for mode in MODES:
                    timed.inside = 0.0
                    start = clock()
                    runs[mode][0]()
                    elapsed = clock() - start
                    if n >= warmup:
                        totals[mode].append(elapsed)
                        hosts[mode].append(elapsed - timed.inside)
    finally:
        if not bare:
            device.ops = timed._inner
    weights = [[np.asarray(v) for v in runs[m][1].state_dict().values()] for m in MODES]
    same = len({repr(runs[m][2]) for m in MODES}) == 1 and all(
        np.array_equal(a, b) for other in weights[1:] for a, b in zip(weights[0], other))
    return {m: (float(np.median(totals[m])), float(np.median(hosts[m]))) for m in MODES}, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cpu")
    parser.add_argument("--models", default="mlp,conv1d,lstm")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--breaks", default="1,2")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--bare", action="store_true", help="no timing wrapper")
    args = parser.parse_args()
    if args.clock == "cpu":
        bench_compile.CLOCK[0] = time.process_time
    print(f"{'model':8} {'backend':7} {'breaks':>6} {'eager ms':>9} {'split/eager':>11} "
          f"{'ahead/eager':>11} {'whole/eager':>11} {'host e/s/a/w ms':>24}  equal")
    for backend in args.backends.split(","):
        for name in args.models.split(","):
            for breaks in map(int, args.breaks.split(",")):
                times, same = run(name, backend, args.steps, breaks, bare=args.bare)
                (e, eh), (s, sh), (a, ah), (c, ch) = (times[m] for m in MODES)
                host = "-" if args.bare else (f"{eh * 1e3:5.2f}/{sh * 1e3:5.2f}/"
                                              f"{ah * 1e3:5.2f}/{ch * 1e3:5.2f}")
                print(f"{name:8} {backend:7} {breaks:6} {e * 1e3:9.3f} {s / e:11.2f} "
                      f"{a / e:11.2f} {c / e:11.2f} {host:>24}  {same}")


if __name__ == "__main__":
    main()
