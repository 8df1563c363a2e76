"""The Conv1d sections of gpu_bench.py: a training step against PyTorch, and each conv1d
hook alone against PyTorch's forward and its two backward parts (cuDNN on CUDA)."""

from __future__ import annotations

import numpy as np
from gpu_timing import timed, timed_pair

import fastnn as fnn
from fastnn import functional as F


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
