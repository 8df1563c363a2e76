"""Core benchmark (issue 2): per-op dispatch overhead and the MLP training step.

Run in one thread so the comparison is stable on 2 cores (see shared FACTS):

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_core.py

Reports medians and ratios measured side by side in this one process:
fastnn op / raw NumPy op, and the MLP step (batch 128, 784-512-512-10, ReLU,
cross-entropy, SGD, float32) of fastnn vs a hand-written NumPy step vs
PyTorch CPU eager (when importable), all interleaved in one process with one
thread each, so that neither thread pool fights the other. Then the same for a
Conv1d training step (input (32, 16, 256), two k=5 convolutions of 32 channels
with ReLU, mean pooling, a linear head, cross-entropy, SGD) against PyTorch.
"""

from __future__ import annotations

import argparse
import json
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


def torch_step_fn(lr=0.01):
    """The same step in PyTorch CPU eager, in this process, limited to one thread."""
    import torch

    torch.set_num_threads(1)
    x_np, y_np = data()
    params = [torch.tensor(p, requires_grad=True) for p in init_params()]
    x, y = torch.tensor(x_np), torch.tensor(y_np)
    opt = torch.optim.SGD(params, lr=lr)

    def step():
        h = torch.relu(x @ params[0].T + params[1])
        h = torch.relu(h @ params[2].T + params[3])
        loss = torch.nn.functional.cross_entropy(h @ params[4].T + params[5], y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step, torch.__version__


CONV_INPUT, CONV_WIDTH, CONV_CLASSES = (32, 16, 256), 32, 10


def conv_data(seed=2, shape=CONV_INPUT):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, CONV_CLASSES, shape[0]))


def fastnn_conv_step_fn(lr=0.01, shape=CONV_INPUT, width=CONV_WIDTH, kernel=5, seed=2):
    """Two convolutions (Conv1d for (N, C, L) ``shape``, Conv2d for (N, C, H, W)), ReLU,
    mean pooling, a linear head, cross-entropy and SGD, in fastnn."""
    from fastnn import nn
    from fastnn.optim import SGD

    x_np, y_np = conv_data(seed, shape)
    x, y = fnn.tensor(x_np), fnn.tensor(y_np)
    conv = nn.Conv1d if len(shape) == 3 else nn.Conv2d
    conv1 = conv(shape[1], width, kernel, padding=kernel // 2)
    conv2 = conv(width, width, kernel, padding=kernel // 2)
    head = nn.Linear(width, CONV_CLASSES)
    params = [*conv1.parameters(), *conv2.parameters(), *head.parameters()]
    opt = SGD(params, lr=lr)
    spatial = tuple(range(2, len(shape)))

    def step():
        h = F.relu(conv2(F.relu(conv1(x))))
        loss = F.cross_entropy(head(h.mean(axis=spatial)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def torch_conv_step_fn(lr=0.01, shape=CONV_INPUT, width=CONV_WIDTH, kernel=5, seed=2):
    """The same step as :func:`fastnn_conv_step_fn` in PyTorch, one thread."""
    import torch

    torch.set_num_threads(1)
    x_np, y_np = conv_data(seed, shape)
    x, y = torch.tensor(x_np), torch.tensor(y_np)
    conv = torch.nn.Conv1d if len(shape) == 3 else torch.nn.Conv2d
    conv1 = conv(shape[1], width, kernel, padding=kernel // 2)
    conv2 = conv(width, width, kernel, padding=kernel // 2)
    head = torch.nn.Linear(width, CONV_CLASSES)
    opt = torch.optim.SGD([*conv1.parameters(), *conv2.parameters(), *head.parameters()], lr=lr)
    spatial = tuple(range(2, len(shape)))

    def step():
        h = torch.relu(conv2(torch.relu(conv1(x))))
        loss = torch.nn.functional.cross_entropy(head(h.mean(spatial)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def interleaved_ms(steps, rounds=7, repeat=6, number=10):
    """Median ms per step of each contender, run in turns so machine noise hits all alike."""
    samples = {name: [] for name in steps}
    with _one_blas_thread():
        for _ in range(rounds):
            for name, step in steps.items():
                samples[name].append(median_time(step, repeat=repeat, number=number))
    return {name: float(np.median(t)) * 1e3 for name, t in samples.items()}


def _one_blas_thread():
    try:
        from threadpoolctl import threadpool_limits

        return threadpool_limits(limits=1)
    except ImportError:
        import contextlib

        return contextlib.nullcontext()


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
    steps = {"fastnn": fastnn_step_fn(), "numpy": numpy_step_fn()}
    if not args.no_torch:
        try:
            steps["torch"], results["torch_version"] = torch_step_fn()
        except ImportError:
            print("PyTorch not importable: skipped")
    ms = interleaved_ms(steps)
    results["mlp_step_ms"] = ms
    results["ratio_fastnn_over_numpy"] = ms["fastnn"] / ms["numpy"]
    print(f"MLP step: fastnn {ms['fastnn']:.3f} ms, hand-written NumPy {ms['numpy']:.3f} ms, "
          f"ratio {results['ratio_fastnn_over_numpy']:.3f} (target <= 1.15)")
    if "torch" in ms:
        results["ratio_fastnn_over_torch"] = ms["fastnn"] / ms["torch"]
        print(f"PyTorch {results['torch_version']} CPU eager step {ms['torch']:.3f} ms; "
              f"fastnn / torch = {results['ratio_fastnn_over_torch']:.3f} (target < 1)")
    if "torch" in ms:
        conv = interleaved_ms({"fastnn": fastnn_conv_step_fn(), "torch": torch_conv_step_fn()},
                              repeat=4, number=5)
        results["conv_step_ms"] = conv
        results["conv_ratio_fastnn_over_torch"] = conv["fastnn"] / conv["torch"]
        print(f"Conv1d step: fastnn {conv['fastnn']:.3f} ms, PyTorch {conv['torch']:.3f} ms; "
              f"fastnn / torch = {results['conv_ratio_fastnn_over_torch']:.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
