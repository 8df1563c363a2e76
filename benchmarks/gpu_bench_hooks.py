"""The fused-hook section of gpu_bench.py: each hook the cuda backend runs as its own
kernels (layer norm forward and backward, GELU's backward, attention forward and
backward) against the core's composite of the same hook on the same backend, alternated,
with the largest relative difference of their results, and against PyTorch's own kernel
where it has one for exactly that computation (aten's layer norm and GELU backward)."""

from __future__ import annotations

from functools import partial

import numpy as np
from gpu_timing import timed_pair

import fastnn as fnn
from fastnn.api import composite, composite_attention, composite_norm

COMPOSITES = {
    "layer_norm_train": composite_norm.layer_norm_train,
    "layer_norm_backward": composite_norm.layer_norm_backward,
    "gelu_backward": composite.gelu_backward,
    "attention": composite_attention.attention,
    "attention_backward": composite_attention.attention_backward,
}


def shapes(small):
    if small:
        return {"rows": (64, 32), "gelu": (64, 48), "heads": (2, 2, 8, 4)}
    return {"rows": (8192, 768), "gelu": (8192, 3072), "heads": (16, 8, 256, 64)}


def _host_arrays(sizes):
    rng = np.random.default_rng(0)
    f32 = np.float32
    rows, d = sizes["rows"]
    b, h, length, e = sizes["heads"]
    arrays = {
        "x": rng.standard_normal(sizes["rows"]).astype(f32),
        "w": rng.standard_normal(d).astype(f32), "b": rng.standard_normal(d).astype(f32),
        "g": rng.standard_normal(sizes["rows"]).astype(f32),
        "gx": rng.standard_normal(sizes["gelu"]).astype(f32),
        "gg": rng.standard_normal(sizes["gelu"]).astype(f32),
        "mask": np.tril(np.ones((length, length), bool)),
    }
    for name in ("q", "k", "v", "ga"):
        arrays[name] = rng.standard_normal((b, h, length, e)).astype(f32)
    return arrays


def _calls(ops, a, eps=1e-5, scale=0.125):
    """{hook: positional arguments}; the saved tensors come from the hooks themselves."""
    _, mean, rstd = ops.layer_norm_train(a["x"], a["w"], a["b"], eps)
    _, weights = ops.attention(a["q"], a["k"], a["v"], a["mask"], scale)
    return {
        "layer_norm_train": (a["x"], a["w"], a["b"], eps),
        "layer_norm_backward": (a["x"], a["w"], mean, rstd, a["g"]),
        "gelu_backward": (a["gx"], ops.gelu(a["gx"]), a["gg"]),
        "attention": (a["q"], a["k"], a["v"], a["mask"], scale),
        "attention_backward": (a["q"], a["k"], a["v"], weights, a["ga"], scale),
    }


def _torch_calls(torch, host, device, eps=1e-5):
    t = {k: torch.from_numpy(v).to(device) for k, v in host.items() if k != "mask"}
    d = host["w"].shape[0]
    aten = torch.ops.aten
    _, mean, rstd = aten.native_layer_norm(t["x"], [d], t["w"], t["b"], eps)
    return {
        "layer_norm_train": lambda: aten.native_layer_norm(t["x"], [d], t["w"], t["b"], eps),
        "layer_norm_backward": lambda: aten.native_layer_norm_backward(
            t["g"], t["x"], [d], mean, rstd, t["w"], t["b"], [True, True, True]),
        "gelu_backward": lambda: aten.gelu_backward(t["gg"], t["gx"]),
    }


def _rel_diff(ops, got, want) -> float:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    worst = 0.0
    for a, b in zip(got, want):
        a, b = ops.to_numpy(a).astype(np.float64), ops.to_numpy(b).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30)))
    return worst


def bench_fused_hooks(args, sync, torch, small):
    sizes = shapes(small)
    host = _host_arrays(sizes)
    dev = fnn.tensor(host["w"], device=args.device)._device
    ops = dev.ops
    arrays = {k: ops.from_numpy(v, dev.index) for k, v in host.items()}
    calls = _calls(ops, arrays)
    tcalls, tsync = {}, None
    if torch is not None:
        tdev = "cuda" if args.device.startswith("cuda") else "cpu"
        tcalls = _torch_calls(torch, host, tdev)
        tsync = (lambda: torch.cuda.synchronize()) if tdev == "cuda" else (lambda: None)
    rows = []
    for name, call_args in calls.items():
        hook = partial(getattr(ops, name), *call_args)
        comp = partial(COMPOSITES[name], ops, *call_args)
        row = {"hook": name, "shape": str(call_args[0].shape),
               "max_rel_diff_vs_composite": _rel_diff(ops, hook(), comp())}
        t_hook, t_comp = timed_pair(hook, sync, comp, sync, args.iters, args.repeats)
        row.update(fastnn_ms=1e3 * t_hook, composite_ms=1e3 * t_comp,
                   composite_over_hook_time=t_comp / t_hook)
        if name in tcalls:
            t_hook, t_torch = timed_pair(hook, sync, tcalls[name], tsync, args.iters,
                                         args.repeats)
            row.update(torch_ms=1e3 * t_torch, fastnn_over_torch_time=t_hook / t_torch)
        rows.append(row)
    return rows
