"""``clip_grad_norm_`` alone: fastnn on a backend against PyTorch CPU, and what it reads back.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_clip.py [--device cpu|opencl] [--rounds N]

Gradients shaped as a small GPT's (a 64x128 embedding, four blocks of a 128x384 attention
projection, a 128x128 output projection, a 128x512 and a 512x128 MLP, their biases and two
norms' weights and biases each: 50 tensors, 0.8M float32 values), clipped at a max_norm
under their norm (so every call scales; ``--max-norm 1e9``: none), the gradients set
afresh before each call. fastnn and torch alternate round by round in one process, one
thread for torch. Reports the medians (ms a call), their ratio, and fastnn's
hook calls and reads back to the host in one call (a read is a wait for the device).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import fastnn as fnn

EMBED, VOCAB, BLOCKS = 128, 64, 4


def _shapes() -> list:
    block = [(3 * EMBED, EMBED), (3 * EMBED,), (EMBED, EMBED), (EMBED,), (4 * EMBED, EMBED),
             (4 * EMBED,), (EMBED, 4 * EMBED), (EMBED,), (EMBED,), (EMBED,), (EMBED,), (EMBED,)]
    return [(VOCAB, EMBED)] + block * BLOCKS + [(EMBED,)]


def _grads(rng) -> list:
    return [rng.standard_normal(s).astype(np.float32) for s in _shapes()]


class _Calls(list):
    """Every hook name called, in order (harness.recording adds each to its ``used``)."""

    add = list.append


def _counts(params, device: str, max_norm: float) -> tuple[int, int]:
    """(hook calls, reads back) of one clip_grad_norm_ call."""
    from fastnn.api.device import as_device
    from fastnn.conformance.harness import recording

    with recording(as_device(device).ops, _Calls()) as names:
        fnn.nn.utils.clip_grad_norm_(params, max_norm)
    return len(names), sum(name.startswith("to_numpy") for name in names)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-norm", type=float, default=1.0,
                        help="1.0 clips every call (the norm is ~900); 1e9 clips none")
    args = parser.parse_args(argv)
    grads = _grads(np.random.default_rng(0))
    params = [fnn.nn.Parameter(fnn.zeros(g.shape, device=args.device)) for g in grads]
    import torch

    torch.set_num_threads(1)
    theirs = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]

    def fresh():  # untimed: the gradients as they were, on both sides
        for p, t, g in zip(params, theirs, grads):
            p.grad = fnn.tensor(g, device=args.device)
            t.grad = torch.from_numpy(g.copy())

    def ours():
        # the norm as a training loop logs it: read once, after the step's work
        return float(fnn.nn.utils.clip_grad_norm_(params, args.max_norm))

    def torch_call():
        return float(torch.nn.utils.clip_grad_norm_(theirs, args.max_norm))

    times = {"fastnn": [], "torch": []}
    for r in range(args.rounds + 1):
        for name, fn in (("fastnn", ours), ("torch", torch_call)):
            fresh()
            start = time.perf_counter()
            fn()
            if r:  # (the first round warms up)
                times[name].append(time.perf_counter() - start)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    fresh()
    calls, reads = _counts(params, args.device, args.max_norm)
    result = {"device": args.device, "max_norm": args.max_norm, "tensors": len(grads),
              "values": int(sum(g.size for g in grads)), "fastnn_ms": round(med["fastnn"], 3),
              "torch_ms": round(med["torch"], 3),
              "fastnn/torch": round(med["fastnn"] / med["torch"], 2),
              "hook_calls": calls, "reads": reads}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
