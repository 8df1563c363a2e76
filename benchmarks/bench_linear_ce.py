"""An LLM head's loss, F.linear_cross_entropy, whole (options=None) and chunked
(LinearCrossEntropyOptions(), PyTorch's "auto" chunking): the peak memory of a forward and
backward (tracemalloc, which sees NumPy's arrays) and its time, fastnn cpu against PyTorch
CPU's same two paths, one BLAS thread, the four contenders taking turns.

    python benchmarks/bench_linear_ce.py [--rows 2048] [--features 128] [--classes 8192]
        [--rounds 5]

PyTorch's allocations are not visible to tracemalloc, so its memory is not reported.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy's import: one BLAS thread for every contender

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--classes", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    import fastnn as fnn

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.features), dtype=np.float32)
    w = (rng.standard_normal((args.classes, args.features)) * 0.05).astype(np.float32)
    t = rng.integers(0, args.classes, args.rows)
    steps = {}
    for name, options in (("whole", None), ("chunked", fnn.nn.LinearCrossEntropyOptions())):
        steps[f"fastnn {name}"] = _step(fnn, x, w, t, options)
    try:
        import torch

        torch.set_num_threads(1)
        for name, options in (("whole", None),
                              ("chunked", torch.nn.LinearCrossEntropyOptions())):
            steps[f"torch {name}"] = _step(torch, x, w, t, options)
    except ImportError:
        print("PyTorch is not installed: pip install torch==2.13.0 to compare")
    times = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    best = {name: min(ts) for name, ts in times.items()}
    peaks = {name: _peak(steps[name]) for name in steps if name.startswith("fastnn")}
    logits = args.rows * args.classes * 4
    print(f"rows {args.rows}, in_features {args.features}, classes {args.classes}: the "
          f"logits are {logits / 2**20:.0f} MiB")
    print("| contender | ms | / torch whole | peak MiB | peak / fastnn whole |")
    print("|---|---|---|---|---|")
    for name in steps:
        ratio = (f"{best[name] / best['torch whole']:.2f}" if "torch whole" in best else "-")
        peak = peaks.get(name)
        shown = ("-", "-") if peak is None else (f"{peak / 2**20:.0f}",
                                                 f"{peak / peaks['fastnn whole']:.2f}")
        print(f"| {name} | {best[name] * 1e3:.1f} | {ratio} | {shown[0]} | {shown[1]} |")
    return 0


def _step(lib, x, w, t, options):
    """One forward and backward of ``lib`` (torch or fastnn) from the same arrays."""
    lx, target = lib.tensor(x), lib.tensor(t)
    lw = lib.tensor(w, requires_grad=True)

    def step():
        lw.grad = None
        loss = lib.nn.functional.linear_cross_entropy(lx, lw, target, options=options)
        loss.backward()
        return float(loss.detach())

    return step


def _peak(step) -> int:
    """Bytes tracemalloc saw at most during one call, above what was held before it."""
    step()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        step()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


if __name__ == "__main__":
    raise SystemExit(main())
