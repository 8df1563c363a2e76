"""Step capture benchmark (issue 23): eager and ``fnn.compile``d training steps side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_compile.py [--backends cpu,opencl]
        [--models mlp,conv1d,cnn,lstm,gru,transformer] [--steps 40] [--json] [--clock cpu]

Per model and backend: the median step time eager and compiled, their ratio, and each
step's *host time*: the step's time minus the time spent inside the backend's hooks
(measured by a timing wrapper around the device's ops table, installed for both runs, so
its own cost counts in both host times alike). Each step ends by reading its loss, so a
step's time includes the device finishing it. Every model trains with Adam from the same
start eagerly and compiled; the weights after the timed steps must be equal bit for bit
(the benchmark says so), so the ratio compares the same work. On a backend that fuses
elementwise chains (``fused_elementwise``: opencl), "unfused" is the compiled step with
fusion off (``fastnn.api.fusion.ENABLED``).

The timing wrapper's own cost (~0.5 us a call) counts as host time in both columns, so
on cpu three more columns measure without it: "hooks", the compiled program's hook
calls run bare (straight-line, on the same arrays, nothing else); "eager-hooks", the
eager step's host time as the step minus those calls; "hollow", the compiled step with
every hook call answered at once from a stored result (everything a replay does but
the backend's work), and its ratio to "eager-hooks". ``--clock cpu`` times the process's CPU time
(on a loaded machine: without the waits for a core; device threads count too). Under the
timing wrapper a backend's ``compile_program`` sees a wrapped ops table and runs every
call through it (cpu's kept buffers are off here; ``bench_models.py`` measures them).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.api import fusion
from fastnn.api.device import as_device

BATCH, CLASSES = 32, 10


class Conv1dNet(nn.Module):
    """Two Conv1d-ReLU layers over (N, 4, 32) and a linear head."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(4, 16, 5, padding=2), nn.Conv1d(16, 16, 5, padding=2)
        self.head = nn.Linear(16 * 32, CLASSES)

    def forward(self, x):
        h = self.c2(self.c1(x).relu()).relu()
        return self.head(h.reshape(x.shape[0], -1))


def model_and_input(name: str, rng):
    """(a fresh model, an input batch as a host array)."""
    from fastnn.cli.cnn import build_cnn
    from fastnn.cli.seq_models import build

    if name == "mlp":
        return (nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                              nn.Linear(128, CLASSES)), rng.standard_normal((BATCH, 64)))
    if name == "conv1d":
        return Conv1dNet(), rng.standard_normal((BATCH, 4, 32))
    if name == "cnn":
        return build_cnn((64,), CLASSES), rng.standard_normal((BATCH, 64))
    return build(name, (1, 66), CLASSES), rng.standard_normal((BATCH, 1, 66))  # 6 patches


class TimedOps:
    """A device's ops table that adds the time spent inside each hook to ``self.inside``."""

    def __init__(self, inner):
        self._inner, self.inside = inner, 0.0

    def __getattr__(self, name):
        target = getattr(self._inner, name)
        if name.startswith("_") or not callable(target) or name == "compile_program":
            return target
        clock, timed = CLOCK[0], self

        def hook(*args, **kwargs):
            start = clock()
            try:
                return target(*args, **kwargs)
            finally:
                timed.inside += clock() - start
        self.__dict__[name] = hook
        return hook


CLOCK = [time.perf_counter]  # --clock cpu: time.process_time


def run(name: str, backend: str, compiled: bool, steps: int, warmup: int = 3,
        fuse: bool = True):
    """(median step seconds, median host seconds, the weights after the steps)."""
    rng = np.random.default_rng(0)
    fnn.manual_seed(0)
    model, host_x = model_and_input(name, rng)
    model = model.to(backend)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x = fnn.tensor(host_x.astype(np.float32), device=backend)
    y = fnn.tensor(rng.integers(0, CLASSES, BATCH), device=backend)

    def step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    fn = fnn.compile(step) if compiled else step
    fusion.ENABLED = fuse
    device = as_device(backend)
    timed = TimedOps(device.ops)
    device.ops = timed
    totals, hosts = [], []
    try:
        for n in range(warmup + steps):
            timed.inside = 0.0
            start = CLOCK[0]()
            fn(x, y).numpy()  # waits for the device: a queued step is not a finished one
            elapsed = CLOCK[0]() - start
            if n >= warmup:
                totals.append(elapsed)
                hosts.append(elapsed - timed.inside)
        weights = [np.asarray(v) for v in model.state_dict().values()]  # buffers too
    finally:
        device.ops = timed._inner
    if compiled:
        run.last = (fn, x, y, steps)
    return float(np.median(totals)), float(np.median(hosts)), weights


def _inputs_of(fn, entry, x, y) -> list:
    """The inputs a replay of ``entry`` hands its program (caught in one more step)."""
    program = entry.program
    real = program.runner()
    seen = []

    def spy(env):
        seen.append(list(env))
        return real(env)

    program._run = spy
    try:
        fn(x, y)
    finally:
        program._run = real
    return seen[0]


def floor_and_hollow(fn, x, y, steps):
    """(median seconds of the compiled step's hook calls run bare: the straight-line
    calls on the same arrays, nothing else; median seconds of the compiled step with
    every hook call answered at once from a stored result: its host time, measured
    without a timing wrapper)."""
    from fastnn.api import program_vm
    from fastnn.api.program import interpreter, last_uses

    entry = fn._last
    env = _inputs_of(fn, entry, x, y)
    program = entry.program.plan
    as_data = type(entry.program.runner()) is program_vm.Interpreted  # (a small program)
    # the floor: the hooks as straight-line calls, whichever way the step replays
    bare = interpreter(program, {n: (getattr(c.device.ops, c.name), (), None)
                                 for n, c in enumerate(program.calls)})
    results = {}

    def keep(n, hook):
        def call(*args, **kwargs):
            results[n] = hook(*args, **kwargs)
            return results[n]
        return call, (), None

    interpreter(program, {n: keep(n, getattr(c.device.ops, c.name))
                          for n, c in enumerate(program.calls)})(list(env))

    def stored(value):
        return (lambda *args, **kwargs: value), (), None

    hollow = interpreter(program, {n: stored(results.get(n))
                                   for n in range(len(program.calls))})
    if as_data:  # the replay's own loop, each call answered from its stored result
        hollow = program_vm.encode(program, last_uses(program.calls, set(program.outputs)),
                                   [stored(results.get(n))[0]
                                    for n in range(len(program.calls))])
    floor, host = [], []
    clock = CLOCK[0]
    for _ in range(steps):
        start = clock()
        bare(list(env))
        floor.append(clock() - start)
    entry.program._resolved = entry.program.tables()
    entry.program._run = hollow
    for _ in range(steps):
        start = clock()
        fn(x, y).numpy()
        host.append(clock() - start)
    entry.program._resolved = None  # the real program again at the next call
    return float(np.median(floor)), float(np.median(host))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cpu,opencl")
    parser.add_argument("--models", default="mlp,conv1d,cnn,lstm,gru,transformer")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    CLOCK[0] = time.perf_counter if args.clock == "wall" else time.process_time
    rows = []
    for backend in args.backends.split(","):
        try:
            as_device(backend)
        except Exception as exc:  # a backend that is not installed here: said, skipped
            print(f"{backend}: skipped ({exc})")
            continue
        for name in args.models.split(","):
            eager, eager_host, w1 = run(name, backend, False, args.steps)
            comp, comp_host, w2 = run(name, backend, True, args.steps)
            floor, hollow = floor_and_hollow(*run.last)
            same = all(np.array_equal(a, b) for a, b in zip(w1, w2))
            fuses = "fused_elementwise" in as_device(backend).backend.implemented
            unfused, _, w3 = run(name, backend, True, args.steps, fuse=False) if fuses else (
                comp, None, w2)
            same = same and all(np.array_equal(a, b) for a, b in zip(w1, w3))
            rows.append({"model": name, "backend": backend, "eager_ms": eager * 1e3,
                         "compiled_ms": comp * 1e3, "ratio": comp / eager,
                         "eager_host_ms": eager_host * 1e3, "compiled_host_ms": comp_host * 1e3,
                         "host_ratio": comp_host / eager_host, "bit_equal": same,
                         "unfused_ms": unfused * 1e3, "hooks_ms": floor * 1e3,
                         "eager_minus_hooks_ms": (eager - floor) * 1e3,
                         "hollow_ms": hollow * 1e3,
                         "hollow_ratio": hollow / max(eager - floor, 1e-9)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'model':12} {'backend':8} {'eager ms':>9} {'compiled':>9} {'ratio':>6} "
          f"{'host eager':>11} {'host comp':>10} {'host ratio':>10} {'unfused':>8} "
          f"{'hooks':>7} {'eager-hooks':>11} {'hollow':>7} {'ratio':>6}  equal")
    for r in rows:
        print(f"{r['model']:12} {r['backend']:8} {r['eager_ms']:9.3f} {r['compiled_ms']:9.3f} "
              f"{r['ratio']:6.2f} {r['eager_host_ms']:11.3f} {r['compiled_host_ms']:10.3f} "
              f"{r['host_ratio']:10.2f} {r['unfused_ms']:8.3f} {r['hooks_ms']:7.3f} "
              f"{r['eager_minus_hooks_ms']:11.3f} {r['hollow_ms']:7.3f} "
              f"{r['hollow_ratio']:6.2f}  {r['bit_equal']}")


if __name__ == "__main__":
    main()
