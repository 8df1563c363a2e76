"""Where a model step's time goes on a backend, per hook: calls, host time and device time.

    python benchmarks/opencl_hook_profile.py [--models Transformer,nanoGPT] [--device opencl]
        [--steps 10] [--top 25]

Every attribute of the backend's ops table is wrapped. Two passes over the same steps: the
first times each outermost hook call as it returns (its host time: the Python around it and
the enqueue), the second waits for the device's queue after each (host time plus the
kernels it launched). A composite's inner calls are counted under their own names with
``(in)`` appended, outside the totals. One thread; the machine's load shows in the noise.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _wrap(ops, stats, depth, sync):
    names = [n for n in vars(ops) if not n.startswith("_") and callable(getattr(ops, n))]
    saved = {n: getattr(ops, n) for n in names}
    clock = time.perf_counter

    def wrapper(name, fn):
        def call(*args, **kwargs):
            outer = depth[0] == 0
            depth[0] += 1
            start = clock()
            try:
                out = fn(*args, **kwargs)
                if outer and sync[0] is not None:
                    sync[0]()
            finally:
                depth[0] -= 1
            row = stats[name if outer else name + " (in)"]
            row[0] += 1
            row[1] += clock() - start
            return out
        return call

    for n, fn in saved.items():
        setattr(ops, n, wrapper(n, fn))
    return saved


def profile(name, device, steps):
    """{hook: [calls, host s, host+device s]} per step, and the step's wall time (s)."""
    import bench_models

    _, state, x, y = bench_models.start(name)
    step = bench_models.fastnn_step(name, state, x, y, device)
    for _ in range(3):
        float(step())
    from fastnn.api.registry import get_backend

    ops = get_backend(device).ops
    finish = None
    if device == "opencl":
        from fastnn_opencl import runtime

        finish = runtime.state(0).queue.finish
    start = time.perf_counter()
    for _ in range(steps):
        float(step())
    wall = (time.perf_counter() - start) / steps
    result = {}
    for sync in (None, finish):
        stats, depth = defaultdict(lambda: [0, 0.0]), [0]
        saved = _wrap(ops, stats, depth, [sync])
        try:
            for _ in range(steps):
                float(step())
        finally:
            for n, fn in saved.items():
                setattr(ops, n, fn)
        for hook, (calls, secs) in stats.items():
            row = result.setdefault(hook, [calls / steps, 0.0, 0.0])
            row[1 if sync is None else 2] = secs / steps
    return result, wall


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="Transformer,nanoGPT")
    parser.add_argument("--device", default="opencl")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    for name in args.models.split(","):
        result, wall = profile(name, args.device, args.steps)
        outer = {k: v for k, v in result.items() if not k.endswith("(in)")}
        host = sum(v[1] for v in outer.values())
        synced = sum(v[2] for v in outer.values())
        print(f"\n{name} on {args.device}: step {wall * 1e3:.1f} ms; outermost hooks "
              f"{sum(v[0] for v in outer.values()):.0f} calls, host {host * 1e3:.1f} ms, "
              f"host+device {synced * 1e3:.1f} ms")
        print(f"{'hook':34s} {'calls':>6s} {'host ms':>8s} {'+dev ms':>8s} {'us/call':>8s}")
        rows = sorted(result.items(), key=lambda kv: -kv[1][2])[:args.top]
        for hook, (calls, h, s) in rows:
            print(f"{hook:34s} {calls:6.0f} {h * 1e3:8.2f} {s * 1e3:8.2f} "
                  f"{s / max(calls, 1) * 1e6:8.1f}")


if __name__ == "__main__":
    main()
