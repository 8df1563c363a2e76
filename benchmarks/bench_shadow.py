"""What shadow mode costs: a training step on a backend, on the reference, and shadowed.

Shadow mode (``fnn.shadow``) runs each hook call of a backend again on a reference
backend and compares; its budget is the two backends' own time plus 50%. This times
one MLP training step (tape, Adam) three ways in alternating rounds, keeping each
one's fastest, so all three see the same machine:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_shadow.py [--backend opencl]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

SIZES = {"small": (64, 128, 32), "large": (784, 512, 128)}  # features, width, batch


def make_step(device: str, features: int, width: int, batch: int):
    """A closure running one training step on ``device``; ends with a sync (loss.item())."""
    fnn.manual_seed(0)
    rng = np.random.default_rng(0)
    with fnn.use(device):
        model = nn.Sequential(nn.Linear(features, width), nn.Activation("relu"),
                              nn.Linear(width, width), nn.Activation("relu"),
                              nn.Linear(width, 10))
        opt = fnn.optim.Adam(model.parameters(), lr=1e-3)
        x = fnn.tensor(rng.normal(size=(batch, features)).astype(np.float32))
        y = fnn.tensor(rng.integers(0, 10, batch))

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return step


def _time(step, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def measure(backend: str, reference: str = "cpu", size: str = "small", rounds: int = 5,
            steps: int = 5) -> dict:
    """Fastest seconds per step of: the backend, the reference, the shadowed backend."""
    features, width, batch = SIZES[size]
    own = make_step(backend, features, width, batch)
    ref = make_step(reference, features, width, batch)
    shadowed = make_step(backend, features, width, batch)
    for step in (own, ref):
        step()
    with fnn.shadow(reference):
        shadowed()  # warm: kernels compiled, tolerances loaded
    best = {"backend": float("inf"), "reference": float("inf"), "shadowed": float("inf")}
    for _ in range(rounds):
        best["backend"] = min(best["backend"], _time(own, steps))
        best["reference"] = min(best["reference"], _time(ref, steps))
        with fnn.shadow(reference):
            best["shadowed"] = min(best["shadowed"], _time(shadowed, steps))
    best["ratio"] = best["shadowed"] / (best["backend"] + best["reference"])
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="opencl")
    parser.add_argument("--reference", default="cpu")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'model':<8}{args.backend + ' ms':>12}{args.reference + ' ms':>10}"
          f"{'shadowed ms':>13}{'shadowed/(both)':>17}")
    for size in SIZES:
        r = measure(args.backend, args.reference, size, args.rounds)
        print(f"{size:<8}{r['backend'] * 1e3:>12.2f}{r['reference'] * 1e3:>10.2f}"
              f"{r['shadowed'] * 1e3:>13.2f}{r['ratio']:>17.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
