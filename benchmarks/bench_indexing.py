"""Indexing benchmark (issue 13): batch indexing, cat and gather, fastnn cpu vs NumPy vs
PyTorch, one thread, measured side by side in one process (interleaved rounds).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_indexing.py [--json PATH]

- batch: ``x[perm[i:i + 128]]`` out of a (60000, 784) float32 data set (a training
  loop's batch), the index a tensor slice as a PyTorch user writes it;
- cat: ``cat`` of 8 float32 tensors of (128, 512) along dim 0;
- gather: ``x.gather(1, index)`` of 1M elements from a (1000, 1000) float32 tensor.

Each line prints the median time per call and the ratios fastnn / NumPy and
fastnn / PyTorch (PyTorch is skipped when not importable).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from bench_core import median_time  # the same timer (benchmarks/ is on sys.path)

import fastnn as fnn


def interleaved(fns: dict, rounds=5) -> dict:
    """Median over rounds of each function's median, the functions taking turns."""
    results = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            results[name].append(median_time(fn, repeat=15, number=20))
    return {name: float(np.median(ts)) for name, ts in results.items()}


def cases(torch):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((60000, 784), dtype=np.float32)
    perm = rng.permutation(60000)
    x_f, perm_f = fnn.tensor(data), fnn.tensor(perm)
    step = {"i": 0}

    def next_i():
        step["i"] = (step["i"] + 128) % (60000 - 128)
        return step["i"]

    batch = {"fastnn": lambda: x_f[perm_f[(i := next_i()):i + 128]],
             "numpy": lambda: data[perm[(i := next_i()):i + 128]]}
    parts = [rng.standard_normal((128, 512), dtype=np.float32) for _ in range(8)]
    parts_f = [fnn.tensor(p) for p in parts]
    cat = {"fastnn": lambda: fnn.cat(parts_f), "numpy": lambda: np.concatenate(parts)}
    big = rng.standard_normal((1000, 1000), dtype=np.float32)
    index = rng.integers(0, 1000, (1000, 1000))
    big_f, index_f = fnn.tensor(big), fnn.tensor(index)
    gather = {"fastnn": lambda: big_f.gather(1, index_f),
              "numpy": lambda: np.take_along_axis(big, index, 1)}
    if torch is not None:
        data_t, perm_t = torch.from_numpy(data), torch.from_numpy(perm)
        batch["torch"] = lambda: data_t[perm_t[(i := next_i()):i + 128]]
        parts_t = [torch.from_numpy(p) for p in parts]
        cat["torch"] = lambda: torch.cat(parts_t)
        big_t, index_t = torch.from_numpy(big), torch.from_numpy(index)
        gather["torch"] = lambda: big_t.gather(1, index_t)
    return {"batch x[perm[i:i+128]] (60000, 784)": batch, "cat of 8 (128, 512)": cat,
            "gather 1M of (1000, 1000)": gather}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    report = {}
    for label, fns in cases(torch).items():
        times = interleaved(fns)
        ratios = {f"fastnn/{k}": times["fastnn"] / times[k] for k in times if k != "fastnn"}
        report[label] = {"seconds": times, "ratios": ratios}
        cells = "  ".join(f"{k} {v * 1e6:8.1f} us" for k, v in times.items())
        ratio_cells = "  ".join(f"{k} {v:5.2f}x" for k, v in ratios.items())
        print(f"{label:40s} {cells}   {ratio_cells}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
