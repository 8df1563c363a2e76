"""One step of Adadelta, Adamax, ASGD and Rprop: the backend's fused hook against the core's
composite of primitives (what a backend without the hook runs), and PyTorch CPU.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_optim_more.py [--device cpu|opencl]

A 1.0M-value float32 model (four 500x500 weights and their biases, each with a gradient in
place), ``optimizer.step()`` alone after a first step; the three runs interleaved round by
round in one process, one thread for torch. Reports medians and the ratios composite /
fused (above 1: the fused hook pays) and fused / torch.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial

import numpy as np

import fastnn as fnn
from fastnn import optim
from fastnn.api import composite
from fastnn.nn import Parameter

WIDTH, LAYERS = 500, 4
RULES = {"Adadelta": {}, "Adamax": {}, "ASGD": {}, "Rprop": {}}
HOOKS = {"Adadelta": "adadelta_step", "Adamax": "adamax_step", "ASGD": "asgd_step",
         "Rprop": "rprop_step"}


def _shapes():
    return [s for _ in range(LAYERS) for s in ((WIDTH, WIDTH), (WIDTH,))]


def _ours(name, device):
    rng = np.random.default_rng(0)
    params = []
    for shape in _shapes():
        p = Parameter.from_numpy(rng.standard_normal(shape, dtype=np.float32) * 0.01,
                                 "connective", device=device)
        p.grad = fnn.tensor(rng.standard_normal(shape, dtype=np.float32), device=device)
        params.append(p)
    opt = getattr(optim, name)(params, **RULES[name])
    opt.step()
    return opt, params


def _theirs(torch, name):
    rng = np.random.default_rng(0)
    params = []
    for shape in _shapes():
        p = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(shape, dtype=np.float32)))
        p.grad = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))
        params.append(p)
    opt = getattr(torch.optim, name)(params, **RULES[name])
    opt.step()
    return opt.step


def _sync(params):
    params[0].numpy()  # waits for a device's queue


def measure(device: str = "cpu", rounds: int = 9) -> dict:
    import torch

    torch.set_num_threads(1)
    out = {}
    for name in RULES:
        fused, fused_params = _ours(name, device)
        comp, comp_params = _ours(name, device)
        ops = comp_params[0]._device.ops
        hook = HOOKS[name]
        own = getattr(ops, hook)
        theirs = _theirs(torch, name)
        times = {"fused": [], "composite": [], "torch": []}
        for _ in range(rounds):
            for kind in times:
                start = time.perf_counter()
                if kind == "fused":
                    fused.step()
                    _sync(fused_params)
                elif kind == "composite":
                    setattr(ops, hook, partial(getattr(composite, hook), ops))
                    try:
                        comp.step()
                        _sync(comp_params)
                    finally:
                        setattr(ops, hook, own)
                else:
                    theirs()
                times[kind].append(time.perf_counter() - start)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        out[name] = {**{f"{k}_ms": round(v, 3) for k, v in med.items()},
                     "composite/fused": round(med["composite"] / med["fused"], 2),
                     "fused/torch": round(med["fused"] / med["torch"], 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(json.dumps(measure(args.device, args.rounds), indent=1))


if __name__ == "__main__":
    main()
