"""The eight model training steps of bench_models.py on a CUDA GPU: fastnn cuda eager,
compiled (``fnn.compile``: CUDA graphs and fused kernels), compiled without graphs, and
PyTorch CUDA eager, interleaved in one process:

    python benchmarks/gpu_models.py [--models MLP,CNN] [--rounds 3] [--seconds 0.2]
                                    [--budget 150] [--out DIR]

Every contender starts from the PyTorch model's weights and one batch and takes SGD steps
(lr 0.01) on cross-entropy; each timed step reads its loss back (the step has finished).
Matmuls run in full FP32 on both sides (TF32 off in torch; cupy's default). Before timing,
5 compiled steps are checked against 5 eager ones from the same weights (largest
relative parameter difference; fused kernels may differ in the last bits). Models left
when ``--budget`` seconds are spent are skipped, and said. Writes ``gpu_models.md`` and
``gpu_models.json`` under ``--out`` after each model (a run stopped early keeps the models
it finished); ``--append`` adds to the rows already there, so that gpu_check.sh can run
each model in a process of its own, under a timeout of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import batch, define, define_names  # noqa: E402

LR = 0.01
DEVICE = {"name": "cuda", "small": False}  # --device cpu --small: the smoke test


def _fastnn_model(name, state):
    import fastnn as fnn
    import fastnn.functional as fF

    model = define(fnn, fF)[name]().to(DEVICE["name"])
    model.load_state_dict(state)
    return model


def _fastnn_step(model):
    import fastnn.functional as fF
    from fastnn import optim

    opt = optim.SGD(list(model.parameters()), lr=LR)

    def step(x, y):
        opt.zero_grad()
        loss = fF.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def contenders(name):
    """{contender: step()} for model ``name`` and the compiled-vs-eager difference."""
    import torch
    from fastnn_cuda import graph

    import fastnn as fnn

    device = DEVICE["name"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    theirs = define(torch, torch.nn.functional)[name]()
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    x, y = batch(name, small=DEVICE["small"])
    fx, fy = fnn.tensor(x, device=device), fnn.tensor(y, device=device)
    steps = {}

    # the check: 5 compiled steps against 5 eager ones
    eager_model, compiled_model = _fastnn_model(name, state), _fastnn_model(name, state)
    eager, compiled = _fastnn_step(eager_model), fnn.compile(_fastnn_step(compiled_model))
    for _ in range(5):
        eager(fx, fy)
        compiled(fx, fy)
    diff = 0.0
    for a, b in zip(eager_model.parameters(), compiled_model.parameters()):
        a, b = a.numpy(), b.numpy()
        diff = max(diff, float(np.max(np.abs(a - b)) / (np.max(np.abs(a)) + 1e-30)))
    steps["eager"] = lambda: eager(fx, fy)
    steps["compiled"] = lambda: compiled(fx, fy)
    plain = fnn.compile(_fastnn_step(_fastnn_model(name, state)))

    def no_graphs():
        graph.ENABLED = False
        try:
            return plain(fx, fy)
        finally:
            graph.ENABLED = True

    steps["compiled, no graphs"] = no_graphs
    torch_device = device if device.startswith("cuda") else "cpu"
    theirs = theirs.to(torch_device)
    t_opt = torch.optim.SGD(list(theirs.parameters()), lr=LR)
    tx, ty = torch.tensor(x).to(torch_device), torch.tensor(y).to(torch_device)

    def theirs_step():
        t_opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(theirs(tx), ty)
        loss.backward()
        t_opt.step()
        return loss.detach()

    steps["torch"] = theirs_step
    return steps, diff


def _loss(value) -> float:
    if type(value).__module__.startswith("torch"):
        return float(value.item())
    return float(value.numpy())


def timed(step, seconds):
    """Median seconds per step over about ``seconds`` (each reads its loss back)."""
    for _ in range(3):  # warm-up: kernel compiles, the capture of the compiled steps
        _loss(step())
    times, spent = [], 0.0
    while spent < seconds or len(times) < 5:
        start = time.perf_counter()
        _loss(step())
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return float(np.median(times))


def run(names, rounds, seconds, budget, rows=None, save=lambda rows: None):
    rows, start = ({} if rows is None else rows), time.perf_counter()
    for name in names:
        if time.perf_counter() - start > budget:
            rows[name] = {"skipped": f"budget of {budget:.0f}s spent"}
            continue
        try:
            steps, diff = contenders(name)
            samples = {k: [] for k in steps}
            for _ in range(rounds):
                for k, step in steps.items():
                    samples[k].append(timed(step, seconds))
        except Exception as exc:  # noqa: BLE001 - report the model and go on
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            save(rows)
            continue
        rows[name] = {k: float(np.median(v)) * 1e3 for k, v in samples.items()}
        rows[name]["max_rel_param_diff"] = diff
        print(name, json.dumps(rows[name]), flush=True)
        save(rows)
    return rows


def table(rows):
    lines = ["| model | eager ms | compiled ms | compiled / eager | no graphs / eager | "
             "eager / torch | compiled / torch | torch ms | compiled vs eager (rel) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if "eager" not in r:
            lines.append(f"| {name} | {r.get('error') or r.get('skipped')} |")
            continue
        lines.append(
            f"| {name} | {r['eager']:.2f} | {r['compiled']:.2f} | "
            f"{r['compiled'] / r['eager']:.2f} | {r['compiled, no graphs'] / r['eager']:.2f} | "
            f"{r['eager'] / r['torch']:.2f} | {r['compiled'] / r['torch']:.2f} | "
            f"{r['torch']:.2f} | {r['max_rel_param_diff']:.1e} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(define_names()))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.2)
    parser.add_argument("--budget", type=float, default=150.0)
    parser.add_argument("--out", default=".")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke run without a GPU")
    parser.add_argument("--small", action="store_true", help="tiny batches (smoke runs)")
    parser.add_argument("--append", action="store_true",
                        help="keep the rows of an earlier run in --out (one model a process)")
    args = parser.parse_args(argv)
    DEVICE.update(name=args.device, small=args.small)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    title = f"## Model steps on {args.device} (fastnn eager, compiled, PyTorch eager)\n\n"

    def save(rows):
        (out / "gpu_models.md").write_text(title + table(rows) + "\n")
        (out / "gpu_models.json").write_text(json.dumps(rows, indent=2))

    earlier = out / "gpu_models.json"
    rows = json.loads(earlier.read_text()) if args.append and earlier.exists() else {}
    rows = run(args.models.split(","), args.rounds, args.seconds, args.budget, rows, save)
    save(rows)
    print(title + table(rows))
    return rows


if __name__ == "__main__":
    main()
