"""fnn.linalg's inv, solve and det on cpu: the backend's hooks (numpy.linalg), the core's
composite (Gauss-Jordan, what a backend without the hooks runs), NumPy and PyTorch, one
thread, taking turns in one process; CPU time per call (the machine is shared).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_linalg.py

Each line prints the median CPU time per call and the ratios of the hook and of the
composite to NumPy.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

import fastnn as fnn
from fastnn.api import composite


def cpu_time(fn, repeat=7, number=3):
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - start) / number)
    return float(np.median(times))


class _Composite:
    """The cpu device's ops with the two linear-algebra hooks replaced by the composites."""

    def __enter__(self):
        self.ops = fnn.get_device().ops
        self.saved = {name: getattr(self.ops, name) for name in ("linalg_solve",
                                                                 "linalg_slogdet")}
        for name in self.saved:
            setattr(self.ops, name, partial(getattr(composite, name), self.ops))

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(self.ops, name, fn)


def rows(torch):
    rng = np.random.default_rng(0)

    def mats(*shape):
        return (rng.standard_normal(shape) + 4 * np.eye(shape[-1])).astype(np.float32)

    inputs = {"inv (64, 8, 8)": (mats(64, 8, 8),), "inv (128, 128)": (mats(128, 128),),
              "solve (1024, 4, 4) x (1024, 4)": (mats(1024, 4, 4),
                                                 rng.standard_normal((1024, 4), np.float32)),
              "det (64, 16, 16)": (mats(64, 16, 16),)}
    ops = {"inv": (fnn.linalg.inv, np.linalg.inv, torch and torch.linalg.inv),
           "solve": (fnn.linalg.solve, lambda a, b: np.linalg.solve(a, b[..., None])[..., 0],
                     torch and torch.linalg.solve),
           "det": (fnn.linalg.det, np.linalg.det, torch and torch.linalg.det)}
    for label, arrays in inputs.items():
        mine, theirs, torchs = ops[label.split()[0]]
        tensors = [fnn.tensor(a) for a in arrays]
        fns = {"hook": lambda m=mine, t=tensors: m(*t), "numpy": lambda f=theirs, a=arrays: f(*a)}
        if torch:
            t_tensors = [torch.tensor(a) for a in arrays]
            fns["torch"] = lambda f=torchs, t=t_tensors: f(*t)
        yield label, fns, lambda m=mine, t=tensors: m(*t)


def main():
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"{'op':32s} {'hook':>9s} {'composite':>10s} {'numpy':>9s} {'torch':>9s} "
          f"{'hook/np':>8s} {'comp/np':>8s}  (ms, CPU time)")
    for label, fns, run in rows(torch):
        times = {name: [] for name in list(fns) + ["composite"]}
        for _ in range(3):  # rounds: the contenders take turns
            for name, fn in fns.items():
                times[name].append(cpu_time(fn))
            with _Composite():
                times["composite"].append(cpu_time(run))
        ms = {name: 1e3 * float(np.median(ts)) for name, ts in times.items()}
        print(f"{label:32s} {ms['hook']:9.3f} {ms['composite']:10.3f} {ms['numpy']:9.3f} "
              f"{ms.get('torch', float('nan')):9.3f} {ms['hook'] / ms['numpy']:8.2f} "
              f"{ms['composite'] / ms['numpy']:8.2f}")


if __name__ == "__main__":
    main()
