"""What fnn.func.vmap's loop costs: per-sample gradients and a forward pass of a small MLP,
vmap against hand-batched code, contenders interleaved in one process:

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_func.py [--batch 64] [--rounds 5]

- ``vmap(grad)``: ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, t)`` with
  ``functional_call`` (the torch.func per-sample-gradient recipe);
- ``loop backward``: one forward and ``backward()`` per sample (what one writes without
  vmap);
- ``hand-batched``: one batched forward and one ``autograd.grad`` to the layers' outputs,
  then the per-sample weight gradients as batched outer products (the Opacus trick);
- ``vmap(forward)`` against ``model(x)`` on the whole batch;
- torch.func's ``vmap(grad)`` (batching rules) for reference, when PyTorch is installed.

Every contender's gradients are checked against the hand-batched ones first. Times are
CPU seconds per call (``time.process_time``), the best of ``--rounds`` interleaved rounds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F
from fastnn import func as ffunc
from fastnn import nn


def _model(d_in: int, hidden: int, d_out: int):
    fnn.manual_seed(0)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, d_out))


def contenders(batch: int, d_in: int = 16, hidden: int = 32, d_out: int = 4) -> dict:
    rng = np.random.default_rng(0)
    model = _model(d_in, hidden, d_out)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = fnn.tensor(rng.standard_normal((batch, d_in)).astype(np.float32))
    t = fnn.tensor(rng.integers(0, d_out, batch))

    def loss(p, xi, ti):
        out = ffunc.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, ti.unsqueeze(0))

    per_sample = ffunc.vmap(ffunc.grad(loss), in_dims=(None, 0, 0))

    def loop_backward():
        grads = {k: [] for k in params}
        for i in range(batch):
            mine = {k: v.detach().requires_grad_(True) for k, v in params.items()}
            loss(mine, x[i], t[i]).backward()
            for k, v in mine.items():
                grads[k].append(v.grad)
        return {k: fnn.stack(v) for k, v in grads.items()}

    def hand_batched():
        w1, b1 = params["0.weight"], params["0.bias"]
        w2, b2 = params["2.weight"], params["2.bias"]
        with fnn.enable_grad():
            z1 = F.linear(x, w1, b1).requires_grad_(True)
            h = fnn.tanh(z1)
            z2 = F.linear(h, w2, b2)
            total = F.cross_entropy(z2, t, reduction="sum")  # sum: row i is sample i's
            d2, d1 = fnn.autograd.grad(total, (z2, z1))
        return {"0.weight": d1.unsqueeze(2) * x.unsqueeze(1), "0.bias": d1,
                "2.weight": d2.unsqueeze(2) * h.detach().unsqueeze(1), "2.bias": d2}

    forward = ffunc.vmap(lambda xi: model(xi.unsqueeze(0)).squeeze(0))
    cases = {"vmap(grad)": lambda: per_sample(params, x, t), "loop backward": loop_backward,
             "hand-batched": hand_batched, "vmap(forward)": lambda: forward(x),
             "model(x)": lambda: model(x)}
    want = hand_batched()
    for name in ("vmap(grad)", "loop backward"):
        got = cases[name]()
        for k in want:
            np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=f"{name}: {k}")
    np.testing.assert_allclose(forward(x).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    try:
        import torch
    except ImportError:
        return cases
    tmodel = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.Tanh(),
                                 torch.nn.Linear(hidden, d_out))
    tparams = {k: torch.tensor(v.numpy()) for k, v in params.items()}
    tx, tt = torch.tensor(x.numpy()), torch.tensor(t.numpy())

    def tloss(p, xi, ti):
        out = torch.func.functional_call(tmodel, p, (xi.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, ti.unsqueeze(0))

    tper_sample = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
    got = tper_sample(tparams, tx, tt)
    for k in want:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-4, atol=1e-6)
    cases["torch vmap(grad)"] = lambda: tper_sample(tparams, tx, tt)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=3)
    args = parser.parse_args()
    cases = contenders(args.batch)
    best = {name: float("inf") for name in cases}
    for _ in range(args.rounds):
        for name, run in cases.items():  # interleaved: each round times every contender
            start = time.process_time()
            for _ in range(args.number):
                run()
            best[name] = min(best[name], (time.process_time() - start) / args.number)
    print(f"batch {args.batch}, best of {args.rounds} rounds, CPU ms per call")
    print(f"{'contender':18s} {'ms':>9s} {'vs hand-batched':>16s}")
    for name, seconds in best.items():
        print(f"{name:18s} {seconds * 1e3:9.3f} {seconds / best['hand-batched']:16.1f}")
    print(f"vmap(forward) / model(x): {best['vmap(forward)'] / best['model(x)']:.1f}")


if __name__ == "__main__":
    main()
