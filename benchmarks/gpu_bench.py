"""GPU benchmarks of fastnn's CUDA backend against cupy itself and PyTorch CUDA eager.

    python benchmarks/gpu_bench.py --out DIR [--budget SECONDS]
    python benchmarks/gpu_bench.py --device cpu --small --out DIR   # smoke run, no GPU

Measures (float32, TF32 off on every side, so all run full-precision FP32):

- matmul TFLOP/s: fastnn ``F.matmul`` on cuda tensors vs ``cupy.matmul`` on the
  same arrays (what fastnn's dispatch costs on top of cuBLAS);
- MLP training step (batch 1024, 784-2048-2048-10, ReLU, cross-entropy, SGD)
  vs the same model in PyTorch eager; also a small, launch-bound MLP;
- Conv1d training step (two k=5 convs, mean pool, linear head, SGD) vs PyTorch,
  and each conv1d hook alone vs PyTorch's forward and backward parts;
- the hooks cuda runs as its own kernels (layer norm, GELU backward, attention)
  against the core's composites and PyTorch's kernels.

The sections live in gpu_bench_mlp.py, gpu_bench_conv.py and gpu_bench_hooks.py,
the timing helpers in gpu_timing.py.

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
import sys
import time
import traceback
from pathlib import Path

import numpy as np

os.environ.pop("CUPY_TF32", None)  # full FP32 in cuBLAS, the same as torch with TF32 off
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_bench_conv import bench_conv, bench_conv_primitives  # noqa: E402
from gpu_bench_hooks import bench_fused_hooks  # noqa: E402
from gpu_bench_mlp import bench_mlp  # noqa: E402
from gpu_timing import Budget, make_sync, timed, torch_env  # noqa: E402

import fastnn as fnn  # noqa: E402
from fastnn import functional as F  # noqa: E402

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
            keys = list(dict.fromkeys(k for row in rows for k in row))  # rows may differ
            lines.append("| " + " | ".join(keys) + " |")
            lines.append("|" + "---|" * len(keys))
            for row in rows:
                values = [row.get(k, "") for k in keys]
                cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in values]
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
        "fused hooks vs composites": lambda: bench_fused_hooks(args, sync, torch, args.small),
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
