"""The convolutions of bench_models.py's Conv1d, CNN and ResNet one call at a time: the cpu
backend's forward, input gradient and weight gradient against PyTorch's, one thread,
interleaved, each the least CPU time (``time.thread_time``) over the rounds, so that the
load of a shared machine weighs less:

    python benchmarks/bench_conv_calls.py [--rounds 9]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy's import

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

#: name: (input shape, output channels, kernel, padding); 1-d inputs are (N, C, L)
CONVS = {
    "Conv1d conv1": ((32, 16, 256), 32, 5, 2),
    "Conv1d conv2": ((32, 32, 256), 32, 5, 2),
    "CNN conv1": ((64, 1, 28, 28), 16, 3, 1),
    "CNN conv2": ((64, 16, 14, 14), 32, 3, 1),
    "ResNet stem": ((32, 3, 32, 32), 16, 3, 1),
    "ResNet block": ((32, 16, 32, 32), 16, 3, 1),
}


def calls(shape, c_out, k, pad):
    """{(kind, contender): call} for one convolution."""
    import torch

    from fastnn.api.device import as_device

    ops = as_device("cpu").ops
    rng = np.random.default_rng(0)
    one_d = len(shape) == 3
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((c_out, shape[1]) + (k,) * (len(shape) - 2)).astype(np.float32)
    g = rng.standard_normal((shape[0], c_out) + shape[2:]).astype(np.float32)
    tx, tw, tg = torch.tensor(x), torch.tensor(w), torch.tensor(g)
    if one_d:
        attrs, size, kernel = (1, pad, 1, 1), shape[2], k
        fwd, gin, gw = ops.conv1d, ops.conv1d_grad_input, ops.conv1d_grad_weight
        t_attrs = ((1,), (pad,), (1,), False, (0,), 1)
    else:
        attrs, size, kernel = ((1, 1), ((pad, pad), (pad, pad)), (1, 1), 1), shape[2:], (k, k)
        fwd, gin, gw = ops.conv2d, ops.conv2d_grad_input, ops.conv2d_grad_weight
        t_attrs = ((1, 1), (pad, pad), (1, 1), False, (0, 0), 1)
    t_fwd = torch.nn.functional.conv1d if one_d else torch.nn.functional.conv2d

    def t_back(mask):
        return lambda: torch.ops.aten.convolution_backward(tg, tx, tw, None, *t_attrs, mask)

    return {
        ("forward", "fastnn"): lambda: fwd(x, w, *attrs),
        ("forward", "torch"): lambda: t_fwd(tx, tw, padding=pad),
        ("grad_input", "fastnn"): lambda: gin(g, w, size, *attrs),
        ("grad_input", "torch"): t_back((True, False, False)),
        ("grad_weight", "fastnn"): lambda: gw(x, g, kernel, *attrs),
        ("grad_weight", "torch"): t_back((False, True, False)),
    }


def least_cpu_ms(fns, rounds, number=3):
    for f in fns.values():
        f()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for key, f in fns.items():
            start = time.thread_time()
            for _ in range(number):
                f()
            best[key] = min(best[key], (time.thread_time() - start) / number)
    return {key: v * 1e3 for key, v in best.items()}


def main(argv=None):
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| conv | forward ms (fastnn / torch) | grad_input | grad_weight |")
    print("|---|---|---|---|")
    for name, spec in CONVS.items():
        ms = least_cpu_ms(calls(*spec), args.rounds)
        cells = [f"{ms[kind, 'fastnn']:.2f} / {ms[kind, 'torch']:.2f} = "
                 f"{ms[kind, 'fastnn'] / ms[kind, 'torch']:.2f}"
                 for kind in ("forward", "grad_input", "grad_weight")]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
