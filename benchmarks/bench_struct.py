"""Structure, selection, scattering and product ops (issue 21): fastnn cpu vs NumPy vs
PyTorch, one thread, measured side by side in one process (interleaved rounds).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_struct.py [--json PATH]

Each line prints the median time per call and the ratios fastnn / NumPy and
fastnn / PyTorch (PyTorch is skipped when not importable; NumPy where it has no
counterpart). These are the measurements that decide whether an op deserves a backend
hook of its own (none does yet: see the commit messages of issue 21).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from bench_core import median_time  # the same timer (benchmarks/ is on sys.path)

import fastnn as fnn


def interleaved(fns: dict, rounds=3) -> dict:
    """Median over rounds of each function's median, the functions taking turns."""
    results = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            results[name].append(median_time(fn, repeat=5, number=3))
    return {name: float(np.median(ts)) for name, ts in results.items()}


def cases(torch):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1000, 1000), dtype=np.float32)
    b = rng.standard_normal((32, 64, 64), dtype=np.float32)
    p, q = (rng.standard_normal((n, 64), dtype=np.float32) for n in (500, 400))
    ints = rng.integers(0, 1000, size=1_000_000)
    src = rng.standard_normal((1000, 100), dtype=np.float32)
    index = rng.integers(0, 100, size=(1000, 100))
    f = {k: fnn.tensor(v) for k, v in dict(a=a, b=b, p=p, q=q, ints=ints, src=src,
                                             index=index).items()}
    t = {k: torch.tensor(v) for k, v in dict(a=a, b=b, p=p, q=q, ints=ints, src=src,
                                               index=index).items()} if torch else {}
    rows = {
        "tril 1000x1000": (lambda: fnn.tril(f["a"]), lambda: np.tril(a),
                           lambda: torch.tril(t["a"])),
        "roll 1000x1000": (lambda: fnn.roll(f["a"], 3, 1), lambda: np.roll(a, 3, 1),
                           lambda: torch.roll(t["a"], 3, 1)),
        "einsum bij,bjk->bik": (lambda: fnn.einsum("bij,bjk->bik", f["b"], f["b"]),
                                lambda: np.einsum("bij,bjk->bik", b, b, optimize=True),
                                lambda: torch.einsum("bij,bjk->bik", t["b"], t["b"])),
        "cdist 500x400x64": (lambda: fnn.cdist(f["p"], f["q"]),
                             lambda: np.sqrt(((p[:, None] - q[None]) ** 2).sum(-1)),
                             lambda: torch.cdist(t["p"], t["q"])),
        "unique 1e6 ints": (lambda: fnn.unique(f["ints"]), lambda: np.unique(ints),
                            lambda: torch.unique(t["ints"])),
        "scatter_reduce amax": (
            lambda: fnn.zeros(1000, 100).scatter_reduce(1, f["index"], f["src"], "amax"), None,
            lambda: torch.zeros(1000, 100).scatter_reduce(1, t["index"], t["src"], "amax")),
        "scatter_reduce sum": (
            lambda: fnn.zeros(1000, 100).scatter_reduce(1, f["index"], f["src"], "sum"), None,
            lambda: torch.zeros(1000, 100).scatter_reduce(1, t["index"], t["src"], "sum")),
    }
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    results = {}
    print(f"{'op':24s} {'fastnn':>10s} {'numpy':>10s} {'torch':>10s} {'/numpy':>7s} "
          f"{'/torch':>7s}")
    for name, (mine, theirs_np, theirs_torch) in cases(torch).items():
        fns = {"fastnn": mine}
        if theirs_np is not None:
            fns["numpy"] = theirs_np
        if torch is not None:
            fns["torch"] = theirs_torch
        times = interleaved(fns)
        results[name] = times
        ms = {k: v * 1e3 for k, v in times.items()}
        cell = {k: f"{ms[k]:10.2f}" if k in ms else f"{'-':>10s}" for k in fns | {"numpy": 0,
                                                                                  "torch": 0}}
        ratio = {k: f"{times['fastnn'] / times[k]:7.2f}" if k in times else f"{'-':>7s}"
                 for k in ("numpy", "torch")}
        print(f"{name:24s} {cell['fastnn']} {cell['numpy']} {cell['torch']} "
              f"{ratio['numpy']} {ratio['torch']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
