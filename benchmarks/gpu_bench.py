"""GPU benchmarks of fastnn's CUDA backend against cupy itself and PyTorch CUDA eager.

    python benchmarks/gpu_bench.py --out DIR [--budget SECONDS]
    python benchmarks/gpu_bench.py --device cpu --small --out DIR   # smoke run, no GPU

Measures (float32, TF32 off on every side, so all run full-precision FP32):

- matmul TFLOP/s: fastnn ``F.matmul`` on cuda tensors vs ``cupy.matmul`` on the
  same arrays (what fastnn's dispatch costs on top of cuBLAS);
- MLP training step (batch 1024, 784-2048-2048-10, ReLU, cross-entropy, SGD)
  vs the same model in PyTorch eager; also a small, launch-bound MLP;
- Conv1d training step (two k=5 convs, mean pool, linear head, SGD) vs PyTorch,
  and each conv1d hook alone vs PyTorch's forward and backward parts.

Times are wall-clock per step over many steps with the device synchronised
before and after (so host overhead counts, as it does in training), median of
``--repeats`` runs; fastnn and PyTorch runs alternate, so that drift in the
machine's speed affects both sides of a ratio. Writes ``gpu_report.json`` and
``gpu_report.md`` to --out.
Each section is skipped, with the reason recorded, once the budget is spent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import traceback

import numpy as np

os.environ.pop("CUPY_TF32", None)  # full FP32 in cuBLAS, the same as torch with TF32 off

import fastnn as fnn  # noqa: E402
from fastnn import functional as F  # noqa: E402


class Budget:
    def __init__(self, seconds):
        self.end = time.perf_counter() + seconds

    def left(self):
        return self.end - time.perf_counter()


def make_sync(device):
    if device.startswith("cuda"):
        import cupy

        return lambda: cupy.cuda.get_current_stream().synchronize()
    return lambda: None


def torch_env(device):
    try:
        import torch
    except ImportError as exc:
        return None, f"torch not importable: {exc}"
    if device.startswith("cuda") and not torch.cuda.is_available():
        return None, "torch has no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, ""


def timed(step, sync, iters, repeats):
    """Median seconds per call of ``step`` (after one warm-up round)."""
    for _ in range(max(2, iters // 5)):
        step()
    sync()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            step()
        sync()
        runs.append((time.perf_counter() - start) / iters)
    return statistics.median(runs)


def timed_pair(step_a, sync_a, step_b, sync_b, iters, repeats):
    """Median seconds per call of two steps measured in alternation (a, b, a, b, ...),
    so that a machine that speeds up or slows down during the run affects both."""
    for step, sync in ((step_a, sync_a), (step_b, sync_b)):
        for _ in range(max(2, iters // 5)):
            step()
        sync()
    runs_a, runs_b = [], []
    for _ in range(repeats):
        for step, sync, runs in ((step_a, sync_a, runs_a), (step_b, sync_b, runs_b)):
            start = time.perf_counter()
            for _ in range(iters):
                step()
            sync()
            runs.append((time.perf_counter() - start) / iters)
    return statistics.median(runs_a), statistics.median(runs_b)


# ---------------------------------------------------------------- matmul


def matmul_row(args, sync, m, k, n):
    """TFLOP/s of one (m, k) @ (k, n) product: fastnn, the raw library, and a transposed b."""
    a = fnn.randn((m, k), seed=1, device=args.device)
    b = fnn.randn((k, n), seed=2, device=args.device)
    bt = fnn.randn((n, k), seed=3, device=args.device)
    raw_a, raw_b = a._data, b._data
    xp = __import__("cupy") if args.device.startswith("cuda") else np
    flops = 2.0 * m * k * n
    with fnn.no_grad():
        t_fnn = timed(lambda: F.matmul(a, b), sync, args.iters, args.repeats)
        # a transposed operand must become a GEMM flag, not a copy
        t_tr = timed(lambda: F.matmul(a, bt.T), sync, args.iters, args.repeats)
    t_raw = timed(lambda: xp.matmul(raw_a, raw_b), sync, args.iters, args.repeats)
    return {
        "shape": f"{m}x{k} @ {k}x{n}",
        "fastnn_tflops": flops / t_fnn / 1e12,
        "raw_tflops": flops / t_raw / 1e12,
        "fastnn_transposed_tflops": flops / t_tr / 1e12,
        "fastnn_over_raw_time": t_fnn / t_raw,
    }


def bench_matmul(args, sync, sizes):
    return [matmul_row(args, sync, m, k, n) for m, k, n in sizes]


# ---------------------------------------------------------------- MLP


def mlp_fastnn(sizes, device):
    layers = []
    for i, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(fnn.nn.Linear(d_in, d_out, device=device))
        if i < len(sizes) - 2:
            layers.append(fnn.nn.Activation("relu"))
    return fnn.nn.Sequential(*layers)


def mlp_torch(torch, sizes, device):
    layers = []
    for i, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(d_in, d_out))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(device)


def copy_weights_to_torch(torch, model, tmodel):
    """Give the torch model fastnn's initial weights (Linear: weight (out, in), bias)."""
    linears = [m for m in tmodel if isinstance(m, torch.nn.Linear)]
    params = [p.numpy() for p in model.parameters()]
    with torch.no_grad():
        for layer, (w, b) in zip(linears, zip(params[0::2], params[1::2])):
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b))


def bench_mlp(args, sync, torch, batch, sizes, lr=0.01):
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y_host = rng.integers(0, sizes[-1], batch)
    x = fnn.tensor(x_host, device=args.device)
    y = fnn.tensor(y_host, dtype=fnn.int64, device=args.device)
    model = mlp_fastnn(sizes, args.device)
    opt = fnn.optim.SGD(model.parameters(), lr=lr)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    result = {"batch": batch, "sizes": "-".join(map(str, sizes))}
    tmodel = None
    if torch is not None:
        tdev = "cuda" if args.device.startswith("cuda") else "cpu"
        tmodel = mlp_torch(torch, sizes, tdev)
        copy_weights_to_torch(torch, model, tmodel)
        topt = torch.optim.SGD(tmodel.parameters(), lr=lr)
        tx, ty = torch.from_numpy(x_host).to(tdev), torch.from_numpy(y_host).to(tdev)

        def tstep():
            topt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(tmodel(tx), ty)
            loss.backward()
            topt.step()
            return loss

        # same weights, same data: the first losses must agree (a correctness check)
        ours = [float(step().item()) for _ in range(3)]
        theirs = [float(tstep().item()) for _ in range(3)]
        result["losses_fastnn"], result["losses_torch"] = ours, theirs
        result["losses_agree"] = bool(np.allclose(ours, theirs, rtol=1e-3, atol=1e-4))
        tsync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
        t_fnn, t_torch = timed_pair(step, sync, tstep, tsync, args.iters, args.repeats)
        result["torch_ms"], result["fastnn_ms"] = 1e3 * t_torch, 1e3 * t_fnn
    else:
        result["fastnn_ms"] = 1e3 * timed(step, sync, args.iters, args.repeats)
    if "torch_ms" in result:
        result["fastnn_over_torch_time"] = result["fastnn_ms"] / result["torch_ms"]
    if args.device.startswith("cuda"):
        # host time (issuing the step) against device time (running it): which one bounds us
        result["fastnn_host_ms"], result["fastnn_gpu_ms"] = host_device_split(step)
        if tmodel is not None:
            result["torch_host_ms"], result["torch_gpu_ms"] = host_device_split(tstep)
        if args.profile_dir:
            profile_step(step, os.path.join(args.profile_dir, f"profile_mlp_{batch}.txt"))
    # the same step with the core's composites instead of the backend's fused backward
    # hooks, alternated with the fused one: what those hooks are worth here
    ops = x._device.ops

    def unfused():
        with composite_backward(ops):
            step()

    t_unfused, t_fused = timed_pair(unfused, sync, step, sync, args.iters, args.repeats)
    result["unfused_backward_over_fused_time"] = t_unfused / t_fused
    if args.device.startswith("cuda"):
        # the opt-in direct cuBLAS matmul (FASTNN_CUDA_GEMM=cublas) against cupy.matmul

        def direct():
            os.environ["FASTNN_CUDA_GEMM"] = "cublas"
            try:
                step()
            finally:
                os.environ.pop("FASTNN_CUDA_GEMM", None)

        t_direct, t_cupy = timed_pair(direct, sync, step, sync, args.iters, args.repeats)
        result["cublas_gemm_over_cupy_gemm_time"] = t_direct / t_cupy
        if "torch_ms" in result:
            result["fastnn_cublas_gemm_over_torch_time"] = (
                t_direct / t_cupy * result["fastnn_over_torch_time"])
    return result


class composite_backward:
    """Within the block, ``ops`` runs the core's composite backward hooks."""

    NAMES = ("bias_act_backward", "softmax_cross_entropy_backward")

    def __init__(self, ops):
        self.ops = ops

    def __enter__(self):
        from functools import partial

        from fastnn.api import composite

        self.saved = {name: getattr(self.ops, name) for name in self.NAMES}
        for name in self.NAMES:
            setattr(self.ops, name, partial(getattr(composite, name), self.ops))

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(self.ops, name, fn)


def host_device_split(step, n_repeat=20):
    """Mean host and device milliseconds of one step (cupyx.profiler: events on the
    current stream, which torch shares as the legacy default stream)."""
    from cupyx.profiler import benchmark

    res = benchmark(step, n_repeat=n_repeat, n_warmup=3)
    return float(res.cpu_times.mean() * 1e3), float(res.gpu_times.mean() * 1e3)


def profile_step(step, path, n=20):
    """Where the host time of a step goes (cProfile, top functions by own time)."""
    import cProfile
    import io
    import pstats

    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        step()
    profiler.disable()
    buf = io.StringIO()
    stats = pstats.Stats(profiler, stream=buf).sort_stats("tottime")
    stats.print_stats(45)
    stats.sort_stats("cumulative").print_stats(30)
    with open(path, "w") as f:
        f.write(f"# {n} steps\n" + buf.getvalue())


# ---------------------------------------------------------------- Conv1d


def bench_conv(args, sync, torch, n, c_in, length, width=64, classes=10, lr=0.01):
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((n, c_in, length)).astype(np.float32)
    y_host = rng.integers(0, classes, n)
    x = fnn.tensor(x_host, device=args.device)
    y = fnn.tensor(y_host, dtype=fnn.int64, device=args.device)
    conv1 = fnn.nn.Conv1d(c_in, width, 5, padding=2, device=args.device)
    conv2 = fnn.nn.Conv1d(width, width, 5, padding=2, device=args.device)
    head = fnn.nn.Linear(width, classes, device=args.device)
    params = list(conv1.parameters()) + list(conv2.parameters()) + list(head.parameters())
    opt = fnn.optim.SGD(params, lr=lr)

    def step():
        opt.zero_grad()
        h = F.relu(conv2(F.relu(conv1(x))))
        loss = F.cross_entropy(head(h.mean(axis=2)), y)
        loss.backward()
        opt.step()
        return loss

    result = {"input": f"({n}, {c_in}, {length})", "width": width}
    if torch is None:
        result["fastnn_ms"] = 1e3 * timed(step, sync, args.iters, args.repeats)
    else:
        tdev = "cuda" if args.device.startswith("cuda") else "cpu"
        nn = torch.nn
        t1, t2 = nn.Conv1d(c_in, width, 5, padding=2), nn.Conv1d(width, width, 5, padding=2)
        th = nn.Linear(width, classes)
        tparams = [p for m in (t1, t2, th) for p in m.to(tdev).parameters()]
        topt = torch.optim.SGD(tparams, lr=lr)
        tx, ty = torch.from_numpy(x_host).to(tdev), torch.from_numpy(y_host).to(tdev)

        def tstep():
            topt.zero_grad(set_to_none=True)
            h = torch.relu(t2(torch.relu(t1(tx))))
            loss = nn.functional.cross_entropy(th(h.mean(dim=2)), ty)
            loss.backward()
            topt.step()

        tsync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
        t_fnn, t_torch = timed_pair(step, sync, tstep, tsync, args.iters, args.repeats)
        result["fastnn_ms"], result["torch_ms"] = 1e3 * t_fnn, 1e3 * t_torch
        result["fastnn_over_torch_time"] = t_fnn / t_torch
    return result


def bench_conv_primitives(args, sync, torch, n, channels, length, k=5, padding=2):
    """Each conv1d hook of the backend alone (the second conv of the step) vs PyTorch's
    forward and its two backward parts (cuDNN on CUDA): tells which one a gap comes from."""
    rng = np.random.default_rng(1)
    shapes = {"x": (n, channels, length), "w": (channels, channels, k),
              "g": (n, channels, length + 2 * padding - k + 1)}
    host = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    dev = fnn.tensor(host["x"], device=args.device)._device
    ops = dev.ops
    x, w, g = (ops.from_numpy(host[name], dev.index) for name in ("x", "w", "g"))
    attrs = (1, padding, 1, 1)
    calls = {
        "conv1d": lambda: ops.conv1d(x, w, *attrs),
        "conv1d_grad_input": lambda: ops.conv1d_grad_input(g, w, length, *attrs),
        "conv1d_grad_weight": lambda: ops.conv1d_grad_weight(x, g, k, *attrs),
    }
    rows = []
    if torch is not None:
        tdev = "cuda" if args.device.startswith("cuda") else "cpu"
        tx, tw, tg = (torch.from_numpy(host[name]).to(tdev) for name in ("x", "w", "g"))
        back = torch.ops.aten.convolution_backward
        tcalls = {
            "conv1d": lambda: torch.nn.functional.conv1d(tx, tw, padding=padding),
            "conv1d_grad_input": lambda: back(tg, tx, tw, None, [1], [padding], [1], False,
                                              [0], 1, [True, False, False]),
            "conv1d_grad_weight": lambda: back(tg, tx, tw, None, [1], [padding], [1], False,
                                               [0], 1, [False, True, False]),
        }
        tsync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
    for name, call in calls.items():
        row = {"primitive": name, "x": str(shapes["x"]), "weight": str(shapes["w"])}
        if torch is None:
            row["fastnn_ms"] = 1e3 * timed(call, sync, args.iters, args.repeats)
        else:
            t_fnn, t_torch = timed_pair(call, sync, tcalls[name], tsync, args.iters,
                                        args.repeats)
            row.update(fastnn_ms=1e3 * t_fnn, torch_ms=1e3 * t_torch,
                       fastnn_over_torch_time=t_fnn / t_torch)
        rows.append(row)
    return rows


# ---------------------------------------------------------------- report


def environment(args, torch):
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "device": args.device, "backends": []}
    for record in fnn.backends():
        env["backends"].append({"name": record.name, "available": record.available,
                                "version": record.version, "devices": record.devices,
                                "reason": record.reason})
    if torch is not None:
        env["torch"] = torch.__version__
        env["torch_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    env["CUPY_TF32"] = os.environ.get("CUPY_TF32", "unset")
    return env


def markdown(report) -> str:
    lines = ["# fastnn CUDA benchmark report", ""]
    env = report["environment"]
    for b in env["backends"]:
        state = "available" if b["available"] else f"unavailable: {b['reason']}"
        lines.append(f"- backend `{b['name']}` {b['version']}: {state} {b['devices']}")
    lines.append(f"- torch: {env.get('torch', 'not used')}; TF32 off; CUPY_TF32 "
                 f"{env['CUPY_TF32']}")
    lines.append("")
    target = report["sections"].get("MLP step (the issue's target)")
    if isinstance(target, dict) and "fastnn_over_torch_time" in target:
        ratio = target["fastnn_over_torch_time"]
        verdict = "met" if ratio <= 1.0 else "NOT met"
        lines.append(f"**Target: the MLP step no slower than PyTorch CUDA eager: fastnn / torch "
                     f"time = {ratio:.3f}, {verdict}.**")
        if "fastnn_cublas_gemm_over_torch_time" in target:
            lines.append(f"With FASTNN_CUDA_GEMM=cublas: "
                         f"{target['fastnn_cublas_gemm_over_torch_time']:.3f}.")
        lines.append("")
    for name, section in report["sections"].items():
        lines.append(f"## {name}")
        if isinstance(section, dict) and "skipped" in section:
            lines.append(f"skipped: {section['skipped']}")
        elif isinstance(section, dict) and "error" in section:
            lines.append("error:\n```\n" + section["error"] + "\n```")
        else:
            rows = section if isinstance(section, list) else [section]
            keys = list(rows[0])
            lines.append("| " + " | ".join(keys) + " |")
            lines.append("|" + "---|" * len(keys))
            for row in rows:
                cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()]
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds for all sections")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--profile-dir", default=None,
                        help="write a cProfile of each MLP step here (cuda only)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    budget = Budget(args.budget)
    sync = make_sync(args.device)
    torch, torch_reason = (None, "--no-torch") if args.no_torch else torch_env(args.device)
    if args.small:
        mm = [(64, 64, 64)]
        big_mlp, small_mlp, conv = (64, [32, 64, 64, 10]), (16, [32, 16, 10]), (4, 3, 32)
        conv_prims = (4, 8, 32)
    else:
        mm = [(1024, 1024, 1024), (4096, 4096, 4096), (1024, 784, 2048), (1024, 2048, 10)]
        big_mlp, small_mlp = (1024, [784, 2048, 2048, 10]), (128, [784, 512, 512, 10])
        conv = (256, 32, 1024)
        conv_prims = (256, 64, 1024)
    sections = {
        "matmul float32": lambda: bench_matmul(args, sync, mm),
        "MLP step (the issue's target)": lambda: bench_mlp(args, sync, torch, *big_mlp),
        "small MLP step (launch-bound)": lambda: bench_mlp(args, sync, torch, *small_mlp),
        "Conv1d step": lambda: bench_conv(args, sync, torch, *conv),
        "Conv1d primitives": lambda: bench_conv_primitives(args, sync, torch, *conv_prims),
    }
    report = {"environment": environment(args, torch), "torch_reason": torch_reason,
              "sections": {}}
    for name, run in sections.items():
        if budget.left() < 10:
            report["sections"][name] = {"skipped": "time budget spent"}
            continue
        start = time.perf_counter()
        try:
            report["sections"][name] = run()
        except Exception:
            report["sections"][name] = {"error": traceback.format_exc(limit=6)}
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
        with open(os.path.join(args.out, "gpu_report.json"), "w") as f:  # partial results too
            json.dump(report, f, indent=2)
    with open(os.path.join(args.out, "gpu_report.md"), "w") as f:
        f.write(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
