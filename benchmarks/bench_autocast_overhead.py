"""What autocast costs outside a region: per-call host time of listed ops on 4x4 float32
tensors (and a small MLP step), for two fastnn checkouts side by side, alternating:

    python benchmarks/bench_autocast_overhead.py --trees /work/main /work/wt-autocast

Each tree runs in its own subprocess (PYTHONPATH = the tree and its cpu backend), rounds
alternate between them, and each row keeps the fastest round (one thread, CPU time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time, timeit
import numpy as np
import fastnn as fnn
import fastnn.functional as F
x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
x, y, b = fnn.tensor(x_np), fnn.tensor(x_np + 1), fnn.tensor(x_np[0].copy())
model = fnn.nn.Sequential(fnn.nn.Linear(4, 8), fnn.nn.ReLU(), fnn.nn.Linear(8, 3))
labels = fnn.tensor(np.array([0, 1, 2, 0]))
def step():
    model.zero_grad()
    F.cross_entropy(model(x), labels).backward()
cases = {
    "x @ y": lambda: x @ y, "F.linear(x, w, b)": lambda: F.linear(x, y, b),
    "softmax(x, -1)": lambda: F.softmax(x, -1), "x.sum()": lambda: x.sum(),
    "x.exp()": lambda: x.exp(), "cat([x, y])": lambda: fnn.cat([x, y]),
    "mlp step": step,
}
number = int(sys.argv[1])
clock = time.process_time  # CPU time: less swayed by other processes on a busy machine
print(json.dumps({k: min(timeit.repeat(f, number=number, repeat=3, timer=clock)) / number
                  * 1e6 for k, f in cases.items()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs=2, required=True, help="baseline and candidate")
    parser.add_argument("--number", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    best: dict = {tree: {} for tree in args.trees}
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for _ in range(args.rounds):
        for tree in args.trees:
            env["PYTHONPATH"] = f"{tree}:{tree}/backends/cpu_numpy"
            out = subprocess.run([sys.executable, "-c", CHILD, str(args.number)], env=env, cwd=tree,
                                 check=True, capture_output=True, text=True).stdout
            for name, us in json.loads(out).items():
                best[tree][name] = min(us, best[tree].get(name, float("inf")))
    base, cand = args.trees
    print(f"{'op':20s} {'baseline us':>12s} {'candidate us':>13s} {'ratio':>7s}")
    for name in best[base]:
        a, b = best[base][name], best[cand][name]
        print(f"{name:20s} {a:12.2f} {b:13.2f} {b / a:7.3f}")


if __name__ == "__main__":
    main()
