"""The eight model steps of ``bench_models.py`` on opencl, eager against ``fnn.compile``d
(the launch list of ``compile_program``), interleaved in one process, with fastnn cpu
eager alongside:

    python benchmarks/opencl_compiled_models.py [--models MLP,LSTM] [--rounds 3]

Per model: the median step time of each contender (each step reads its loss back, so the
device has finished it), compiled / eager on opencl, opencl compiled / cpu eager, the
number of launches a replay makes, and a replay's host time per launch (the time until
the compiled call returns, the device still working, over its launches) beside raw
pyopencl's for the same launches (enqueued alone: PoCL's own cost of each enqueue). The eager and
compiled models start from the same weights and batch; their losses after the timed
steps must be equal bit for bit (the last column says so).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import batch, define, define_names, timed  # noqa: E402


def steps_for(name, lr=0.01, warm=3):
    """{contender: step()} from one set of weights: cpu eager, opencl eager and compiled,
    each called ``warm`` times (a compiled step records, then checks its first replay)."""
    import fastnn as fnn
    import fastnn.functional as F
    from fastnn import optim

    fnn.manual_seed(0)
    state = None
    x, y = batch(name)
    out = {}
    for label, device, compiled in (("cpu", "cpu", False), ("opencl", "opencl", False),
                                    ("opencl compiled", "opencl", True)):
        model = define(fnn, F)[name]().to(device)
        if state is None:
            state = {k: np.asarray(v).copy() for k, v in model.state_dict().items()}
        model.load_state_dict(state)
        opt = optim.SGD(list(model.parameters()), lr=lr)
        fx, fy = fnn.tensor(x, device=device), fnn.tensor(y, device=device)

        def step(xb, yb, model=model, opt=opt):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss

        fn = fnn.compile(step) if compiled else step
        out[label] = (lambda fn=fn, fx=fx, fy=fy: fn(fx, fy).detach())
        out[label].compiled = fn if compiled else None
        for _ in range(warm):
            float(out[label]())
    return out


def replay_host_us(compiled, call, n=20) -> tuple[int, float, float, float, float]:
    """(launches per replay, host microseconds per launch of a replay: wall time until the
    call returns, and this thread's CPU time in it, which a machine whose cores also run
    the device (PoCL) or other work inflates less; then the same two for raw pyopencl
    enqueueing the replay's kernels, arguments set, with nothing else: the floor)."""
    runner = compiled._last.program.runner()
    fast = getattr(getattr(runner, "__self__", None), "fast", None)
    source = getattr(fast, "source", "")
    launches = source.count("    E(")
    float(call())
    wall = cpu = float("inf")
    for _ in range(n):
        start, start_cpu = time.perf_counter(), time.thread_time()
        loss = call()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.thread_time() - start_cpu)
        float(loss)
    per = 1e6 / max(launches, 1)
    raw_wall, raw_cpu = _raw_us(fast, call, n) if launches else (float("nan"),) * 2
    return launches, wall * per, cpu * per, raw_wall * per, raw_cpu * per


def _raw_us(fast, call, n) -> tuple[float, float]:
    """The best wall and CPU seconds of enqueueing one replay's launches (the same kernels,
    sizes and arguments) with pyopencl alone, then a flush, the queue drained before each."""
    scope = fast.__wrapped__.__globals__
    enqueue, seen = scope["E"], []
    scope["E"] = lambda *launch: (seen.append(launch), enqueue(*launch))[1]
    try:
        float(call())
    finally:
        scope["E"] = enqueue
    queue = seen[0][0]
    wall = cpu = float("inf")
    for _ in range(n):
        queue.finish()
        start, start_cpu = time.perf_counter(), time.thread_time()
        for launch in seen:
            enqueue(*launch)
        queue.flush()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.thread_time() - start_cpu)
    queue.finish()
    return wall, cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(define_names()))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args(argv)
    print("| model | cpu ms | opencl ms | compiled ms | compiled / eager | compiled / cpu | "
          "launches | host us / launch (wall, cpu) | raw pyopencl us / launch (wall, cpu) | "
          "equal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        try:
            steps = steps_for(name)
        except Exception as exc:  # noqa: BLE001  (e.g. the first replay's check failed)
            print(f"| {name} | not compiled: {type(exc).__name__}: {str(exc)[:160]} |")
            continue
        samples = {k: [] for k in steps}
        for _ in range(args.rounds):
            for k, step in steps.items():
                samples[k].append(timed(step, args.seconds))
        ms = {k: float(np.median(v)) * 1e3 for k, v in samples.items()}
        compiled = steps["opencl compiled"]
        launches, wall, cpu, raw_wall, raw_cpu = replay_host_us(compiled.compiled, compiled)
        same = _same_losses(name)
        print(f"| {name} | {ms['cpu']:.1f} | {ms['opencl']:.1f} | "
              f"{ms['opencl compiled']:.1f} | {ms['opencl compiled'] / ms['opencl']:.2f} | "
              f"{ms['opencl compiled'] / ms['cpu']:.2f} | {launches} | {wall:.2f}, {cpu:.2f} | "
              f"{raw_wall:.2f}, {raw_cpu:.2f} | "
              f"{same} |", flush=True)


def _same_losses(name, steps=4) -> bool:
    """Whether eager and compiled opencl steps from one start give the same losses."""
    fresh = steps_for(name, warm=0)
    eager = [np.asarray(fresh["opencl"]().numpy()) for _ in range(steps)]
    compiled = [np.asarray(fresh["opencl compiled"]().numpy()) for _ in range(steps)]
    return all(np.array_equal(a, b) for a, b in zip(eager, compiled))


if __name__ == "__main__":
    main()
