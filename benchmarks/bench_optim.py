"""One optimizer step for a 10M-parameter model: fastnn cpu against PyTorch CPU (issue 15).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_optim.py

The model is an MLP's worth of float32 parameters (four 1581x1581 weight
matrices and their biases: 10.0M values, all connective or bias), each with a
gradient already in place; one step is ``optimizer.step()`` alone. SGD with
momentum 0.9 (after its first step, so the buffer exists) and Adam (default
betas), each measured in one process with one thread for both libraries,
interleaved round by round so that drift hits both alike. Reports the medians
and the ratio fastnn / PyTorch (below 1: fastnn is faster). PyTorch uses its
default (foreach) implementation.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import fastnn as fnn
from fastnn import optim
from fastnn.nn import Parameter

WIDTH, LAYERS = 1581, 4  # 4 * (1581^2 + 1581) = 10.0M parameters


def _shapes():
    return [s for _ in range(LAYERS) for s in ((WIDTH, WIDTH), (WIDTH,))]


def _fastnn_setup(kind):
    rng = np.random.default_rng(0)
    params = []
    for shape in _shapes():
        p = Parameter.from_numpy(rng.standard_normal(shape, dtype=np.float32) * 0.01,
                                 "connective" if len(shape) == 2 else "bias")
        p.grad = fnn.tensor(rng.standard_normal(shape, dtype=np.float32))
        params.append(p)
    opt = (optim.SGD(params, lr=1e-3, momentum=0.9) if kind == "sgd"
           else optim.Adam(params, lr=1e-3))
    opt.step()  # state allocated, as in a running training loop
    return opt.step


def _torch_setup(torch, kind):
    rng = np.random.default_rng(0)
    params = []
    for shape in _shapes():
        p = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(shape,
                                                                     dtype=np.float32) * 0.01))
        p.grad = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))
        params.append(p)
    opt = (torch.optim.SGD(params, lr=1e-3, momentum=0.9) if kind == "sgd"
           else torch.optim.Adam(params, lr=1e-3))
    opt.step()
    return opt.step


def measure(rounds: int = 15) -> dict:
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is optional
        torch = None
    count = sum(int(np.prod(s)) for s in _shapes())
    out = {"parameters": count}
    for kind in ("sgd", "adam"):
        ours = _fastnn_setup(kind)
        theirs = _torch_setup(torch, kind) if torch is not None else None
        times = {"fastnn": [], "torch": []}
        for _ in range(rounds):
            for name, step in (("fastnn", ours), ("torch", theirs)):
                if step is None:
                    continue
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
        row = {f"{name}_ms": float(np.median(t)) * 1e3 for name, t in times.items() if t}
        if "torch_ms" in row:
            row["ratio"] = row["fastnn_ms"] / row["torch_ms"]
        out["sgd_momentum" if kind == "sgd" else "adam"] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results = measure(args.rounds)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"one optimizer step, {results['parameters'] / 1e6:.1f}M float32 parameters, "
          "1 thread")
    for name in ("sgd_momentum", "adam"):
        row = results[name]
        line = f"  {name:13s} fastnn {row['fastnn_ms']:7.2f} ms"
        if "torch_ms" in row:
            line += f"   torch {row['torch_ms']:7.2f} ms   ratio {row['ratio']:.2f}"
        print(line)


if __name__ == "__main__":
    main()
