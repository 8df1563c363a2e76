"""Loading a checkpoint: fnn.load of PyTorch's torch.save file and of fastnn's own
safetensors file, against torch.load (weights_only=True) of the torch.save file.

The state is ``--tensors`` float32 tensors of (``--rows``, 256), written once as a
torch.save zip and as fnn.save safetensors; the three loads then take turns over
``--rounds`` rounds, and each is reported as its least time and its ratio to torch.load.
The first load of each file reads it into the page cache, so every round reads from
memory: what is compared is the readers, not the disk.

    python benchmarks/bench_load.py [--tensors 200] [--rows 256] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import fastnn as fnn


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=200)
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: pip install torch==2.13.0 to compare")
        return 0
    rng = np.random.default_rng(0)
    state = {f"layer{i}.weight": rng.standard_normal((args.rows, 256), dtype=np.float32)
             for i in range(args.tensors)}
    with tempfile.TemporaryDirectory() as folder:
        pt, st = os.path.join(folder, "s.pt"), os.path.join(folder, "s.safetensors")
        torch.save({k: torch.from_numpy(v) for k, v in state.items()}, pt)
        fnn.save(state, st)
        loads = {"torch.load(.pt)": lambda: torch.load(pt, weights_only=True),
                 "fnn.load(.pt)": lambda: fnn.load(pt),
                 "fnn.load(.safetensors)": lambda: fnn.load(st)}
        best = dict.fromkeys(loads, float("inf"))
        for _ in range(args.rounds):
            for name, load in loads.items():
                start = time.perf_counter()
                load()
                best[name] = min(best[name], time.perf_counter() - start)
    megabytes = sum(v.nbytes for v in state.values()) / 2**20
    print(f"{args.tensors} tensors, {megabytes:.0f} MiB; least of {args.rounds} rounds")
    print(f"{'load':<24}{'ms':>9}{'/ torch.load':>14}")
    for name, seconds in best.items():
        print(f"{name:<24}{seconds * 1e3:>9.1f}{seconds / best['torch.load(.pt)']:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
