"""Core benchmark (issue 2): per-op dispatch overhead and the MLP training step.

Run in one thread so the comparison is stable on 2 cores (see shared FACTS):

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_core.py

Reports medians and ratios measured side by side in this one process:
fastnn op / raw NumPy op, and the MLP step (batch 128, 784-512-512-10, ReLU,
cross-entropy, SGD, float32) of fastnn vs a hand-written NumPy step vs
PyTorch CPU eager (when importable; in a separate process so the two thread
pools don't fight).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import fastnn as fnn
import fastnn.functional as F

BATCH, SIZES = 128, (784, 512, 512, 10)


def median_time(fn, repeat=30, number=10):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return float(np.median(times))


def dispatch_overhead():
    a_np = np.ones((2, 2), np.float32)
    a = fnn.tensor(a_np)
    rows = {}
    rows["add"] = (median_time(lambda: a + a, number=2000), median_time(lambda: a_np + a_np,
                                                                          number=2000))
    rows["matmul"] = (median_time(lambda: a @ a, number=2000),
                      median_time(lambda: a_np @ a_np, number=2000))
    rows["exp"] = (median_time(lambda: a.exp(), number=2000),
                   median_time(lambda: np.exp(a_np), number=2000))
    return {k: {"fastnn_us": f * 1e6, "numpy_us": n * 1e6, "overhead_us": (f - n) * 1e6}
            for k, (f, n) in rows.items()}


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return params


def data(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BATCH, SIZES[0])).astype(np.float32),
            rng.integers(0, SIZES[-1], BATCH))


def fastnn_step_fn(lr=0.01):
    x_np, y_np = data()
    params = [fnn.tensor(p, requires_grad=True) for p in init_params()]
    x, y = fnn.tensor(x_np), fnn.tensor(y_np)
    try:
        from fastnn.optim import SGD

        opt = SGD(params, lr=lr)
    except ImportError:  # before the optim package exists
        opt = None

    def step():
        h = x
        for i in range(0, len(params) - 2, 2):
            h = F.linear(h, params[i], params[i + 1], "relu")
        logits = F.linear(h, params[-2], params[-1])
        loss = F.cross_entropy(logits, y)
        for p in params:
            p.grad = None
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            ops = fnn.get_device().ops
            ops.sgd_step([p._data for p in params], [p.grad._data for p in params],
                         [None] * len(params), [lr] * len(params), [0.0] * len(params),
                         0.0, 0.0, False, True)
        return loss

    return step


def numpy_step_fn(lr=0.01):
    """What a careful person writes by hand in NumPy for the same step."""
    x, y = data()
    params = init_params()
    rows = np.arange(BATCH)

    def step():
        w1, b1, w2, b2, w3, b3 = params
        z1 = x @ w1.T + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2.T + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3.T + b3
        shifted = logits - logits.max(1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) - shifted[rows, y])
        g = e / s
        g[rows, y] -= 1
        g /= BATCH
        grads = [None] * 6
        grads[4], grads[5] = g.T @ h2, g.sum(0)
        g = (g @ w3) * (z2 > 0)
        grads[2], grads[3] = g.T @ h1, g.sum(0)
        g = (g @ w2) * (z1 > 0)
        grads[0], grads[1] = g.T @ x, g.sum(0)
        for p, gr in zip(params, grads):
            p -= lr * gr
        return loss

    return step


TORCH_SCRIPT = r"""
import json, sys, time, numpy as np, torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from bench_core import init_params, data, median_time, BATCH
x_np, y_np = data()
params = [torch.tensor(p, requires_grad=True) for p in init_params()]
x, y = torch.tensor(x_np), torch.tensor(y_np)
opt = torch.optim.SGD(params, lr=0.01)
def step():
    h = torch.relu(x @ params[0].T + params[1])
    h = torch.relu(h @ params[2].T + params[3])
    loss = torch.nn.functional.cross_entropy(h @ params[4].T + params[5], y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print(json.dumps({"torch_step_ms": median_time(step, repeat=20, number=10) * 1e3,
                  "torch_version": torch.__version__}))
"""


def torch_step_ms():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        out = subprocess.run([sys.executable, "-c", TORCH_SCRIPT, os.path.dirname(__file__)],
                             capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_info

        blas = [(i["internal_api"], i.get("architecture"), i["num_threads"])
                for i in threadpool_info()]
    except ImportError:
        blas = "threadpoolctl not installed"
    results = {"blas": blas, "dispatch": dispatch_overhead()}
    print(f"BLAS: {blas}")
    for op, row in results["dispatch"].items():
        print(f"dispatch {op:7s} fastnn {row['fastnn_us']:6.2f} us  numpy {row['numpy_us']:6.2f} us"
              f"  overhead {row['overhead_us']:5.2f} us")
    fast, hand = fastnn_step_fn(), numpy_step_fn()
    # interleave the two so machine noise hits both alike
    t_fast, t_hand = [], []
    for _ in range(5):
        t_fast.append(median_time(fast, repeat=8, number=10))
        t_hand.append(median_time(hand, repeat=8, number=10))
    results["mlp_step_ms"] = {"fastnn": np.median(t_fast) * 1e3, "numpy": np.median(t_hand) * 1e3}
    ratio = results["mlp_step_ms"]["fastnn"] / results["mlp_step_ms"]["numpy"]
    results["ratio_fastnn_over_numpy"] = ratio
    print(f"MLP step: fastnn {results['mlp_step_ms']['fastnn']:.3f} ms, hand-written NumPy "
          f"{results['mlp_step_ms']['numpy']:.3f} ms, ratio {ratio:.3f} (target <= 1.15)")
    if not args.no_torch:
        torch_res = torch_step_ms()
        if torch_res:
            results.update(torch_res)
            r = results["mlp_step_ms"]["fastnn"] / torch_res["torch_step_ms"]
            results["ratio_fastnn_over_torch"] = r
            print(f"PyTorch {torch_res['torch_version']} CPU step {torch_res['torch_step_ms']:.3f}"
                  f" ms; fastnn / torch = {r:.3f} (target < 1)")
        else:
            print("PyTorch not importable: skipped")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
