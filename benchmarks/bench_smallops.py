"""Per-op host time of the small-tensor fast paths (issue 22): transpose, basic slicing,
``cat``, ``linear`` and ``softmax`` on 4x4 float32 tensors, fastnn cpu beside PyTorch eager,
with and without a tape:

    python benchmarks/bench_smallops.py [--number 20000] [--rounds 5]

Each row is the fastest of several rounds, fastnn and PyTorch alternating (one thread).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402


def cases(lib, functional):
    """{name: fn} for ``lib`` torch or fastnn (``functional``: its F)."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 4)).astype(np.float32)
    x, y = lib.tensor(x_np), lib.tensor(x_np + 1)
    g = lib.tensor(x_np, requires_grad=True)
    w, b = lib.tensor(x_np.T.copy()), lib.tensor(x_np[0].copy())
    return {
        "x.T": lambda: x.T,
        "x.transpose(0, 1)": lambda: x.transpose(0, 1),
        "x[1:3]": lambda: x[1:3],
        "x[:, 1:3]": lambda: x[:, 1:3],
        "x[1]": lambda: x[1],
        "cat([x, y])": lambda: lib.cat([x, y]),
        "cat([x, y], 1)": lambda: lib.cat([x, y], 1),
        "F.linear(x, w, b)": lambda: functional.linear(x, w, b),
        "F.linear(x, w)": lambda: functional.linear(x, w),
        "softmax(x, -1)": lambda: functional.softmax(x, -1),
        "x.softmax(0)": lambda: x.softmax(0),
        "taped g.T": lambda: g.T,
        "taped g[1:3]": lambda: g[1:3],
        "taped cat": lambda: lib.cat([g, y]),
        "taped linear": lambda: functional.linear(g, w, b),
        "taped softmax": lambda: functional.softmax(g, -1),
    }


def per_call_us(fn, number):
    return timeit.timeit(fn, number=number) / number * 1e6


def measure(number=20000, rounds=5):
    """{name: (fastnn us, torch us)}, each the fastest round."""
    import torch

    import fastnn as fnn
    import fastnn.functional as fF

    torch.set_num_threads(1)
    ours, theirs = cases(fnn, fF), cases(torch, torch.nn.functional)
    rows = {}
    for name in ours:
        mine, other = [], []
        for _ in range(rounds):
            mine.append(per_call_us(ours[name], number))
            other.append(per_call_us(theirs[name], number))
        rows[name] = (min(mine), min(other))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'op (4x4 float32)':<20}{'fastnn us':>11}{'torch us':>10}{'ratio':>8}")
    for name, (mine, other) in measure(args.number, args.rounds).items():
        print(f"{name:<20}{mine:>11.2f}{other:>10.2f}{mine / other:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
