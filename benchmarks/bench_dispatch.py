"""Per-op host time on tiny (4x4 float32) tensors: fastnn cpu beside PyTorch eager.

What it measures is the framework's own cost per call (argument checks, dtype
promotion, dispatch, the tape), since a 4x4 op costs NumPy or ATen well under
a microsecond. Run with one thread: ``OPENBLAS_NUM_THREADS=1 python
benchmarks/bench_dispatch.py``; each row is the fastest of several rounds,
fastnn and PyTorch alternating, so that both see the same machine.
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np


def cases(fnn, torch):
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    fx, fy = fnn.tensor(x_np), fnn.tensor(x_np + 1)
    fg = fnn.tensor(x_np, requires_grad=True)
    rows = {
        "add": (lambda: fx + fy,),
        "scalar mul": (lambda: fx * 2.0,),
        "matmul": (lambda: fx @ fy,),
        "sum": (lambda: fx.sum(),),
        "reshape": (lambda: fx.reshape(16),),
        "relu": (lambda: fx.relu(),),
        "exp": (lambda: fx.exp(),),
        "taped add": (lambda: fg + fy,),
        "x.T": (lambda: fx.T,),
        "x[1:3]": (lambda: fx[1:3],),
        "view(16)": (lambda: fx.view(16),),
        "detach": (lambda: fg.detach(),),
        "add_ (in place)": (lambda: fx.add_(fy),),
    }
    if torch is not None:
        tx, ty = torch.tensor(x_np), torch.tensor(x_np + 1)
        tg = torch.tensor(x_np, requires_grad=True)
        theirs = [lambda: tx + ty, lambda: tx * 2.0, lambda: tx @ ty, lambda: tx.sum(),
                  lambda: tx.reshape(16), lambda: tx.relu(), lambda: tx.exp(), lambda: tg + ty,
                  lambda: tx.T, lambda: tx[1:3], lambda: tx.view(16), lambda: tg.detach(),
                  lambda: tx.add_(ty)]
        for key, fn in zip(rows, theirs):
            rows[key] = rows[key] + (fn,)
    return rows


def per_call_us(fn, number: int) -> float:
    return timeit.timeit(fn, number=number) / number * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    import fastnn as fnn

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"{'op (4x4 float32)':<18}{'fastnn us':>11}{'torch us':>10}{'ratio':>8}")
    for name, fns in cases(fnn, torch).items():
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(per_call_us(fns[0], args.number))
            if len(fns) > 1:
                theirs.append(per_call_us(fns[1], args.number))
        mine = min(ours)  # the least-disturbed round: timeit's advice for noisy machines
        if theirs:
            other = min(theirs)
            print(f"{name:<18}{mine:>11.2f}{other:>10.2f}{mine / other:>8.2f}")
        else:
            print(f"{name:<18}{mine:>11.2f}{'-':>10}{'-':>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
