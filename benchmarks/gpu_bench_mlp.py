"""The MLP training-step section of gpu_bench.py: fastnn against PyTorch from the same
weights and data (the first losses must agree), host against device time, the backend's
fused backward hooks against the core's composites, and the opt-in direct cuBLAS GEMM."""

from __future__ import annotations

import os

import numpy as np
from gpu_timing import host_device_split, profile_step, timed, timed_pair

import fastnn as fnn
from fastnn import functional as F


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
