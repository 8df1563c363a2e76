"""Convolution training steps, fastnn cpu vs PyTorch CPU, one thread each, side by side.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_conv.py

- Conv1d step: input (32, 16, 256), two k=5 convolutions of 32 channels (padding 2),
  ReLU, mean pooling, a linear head, cross-entropy, SGD (bench_core.py's case);
- Conv2d step: input (32, 8, 32, 32), two 3x3 convolutions of 16 channels (padding 1),
  ReLU, mean pooling, a linear head, cross-entropy, SGD;
- the conv2d primitives of the second convolution alone (forward, input and weight
  gradients), against torch's forward and the two gradients of its backward.

All contenders run in turns in this one process (``bench_core.interleaved_ms``), so
machine noise hits them alike; ratios are fastnn time / PyTorch time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402

CONV2D_INPUT, CONV2D_WIDTH = (32, 8, 32, 32), 16


def fastnn_conv2d_step_fn(lr=0.01):
    return bench_core.fastnn_conv_step_fn(lr, CONV2D_INPUT, CONV2D_WIDTH, 3, seed=3)


def torch_conv2d_step_fn(lr=0.01):
    return bench_core.torch_conv_step_fn(lr, CONV2D_INPUT, CONV2D_WIDTH, 3, seed=3)


def primitive_steps():
    """{name: step} for the second convolution's three primitives, fastnn and torch."""
    import torch

    from fastnn.api.device import as_device

    rng = np.random.default_rng(4)
    n, _, h, w = CONV2D_INPUT
    c = CONV2D_WIDTH
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
    g = rng.standard_normal((n, c, h, w)).astype(np.float32)
    ops = as_device("cpu").ops
    attrs = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    tx, tw, tg = torch.tensor(x), torch.tensor(wt), torch.tensor(g)
    mask = (True, True, False)

    def torch_backward():
        return torch.ops.aten.convolution_backward(tg, tx, tw, None, (1, 1), (1, 1), (1, 1),
                                                   False, (0, 0), 1, mask)

    return {
        "fastnn conv2d": lambda: ops.conv2d(x, wt, *attrs),
        "torch conv2d": lambda: torch.nn.functional.conv2d(tx, tw, padding=1),
        "fastnn both gradients": lambda: (ops.conv2d_grad_input(g, wt, (h, w), *attrs),
                                          ops.conv2d_grad_weight(x, g, (3, 3), *attrs)),
        "torch both gradients": torch_backward,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    results = {}
    steps = {"conv1d fastnn": bench_core.fastnn_conv_step_fn(),
             "conv1d torch": bench_core.torch_conv_step_fn(),
             "conv2d fastnn": fastnn_conv2d_step_fn(), "conv2d torch": torch_conv2d_step_fn()}
    ms = bench_core.interleaved_ms(steps, rounds=args.rounds, repeat=4, number=5)
    results["step_ms"] = ms
    for kind in ("conv1d", "conv2d"):
        ratio = ms[f"{kind} fastnn"] / ms[f"{kind} torch"]
        results[f"{kind}_ratio_fastnn_over_torch"] = ratio
        print(f"{kind.capitalize()} step: fastnn {ms[f'{kind} fastnn']:.2f} ms, PyTorch "
              f"{ms[f'{kind} torch']:.2f} ms; fastnn / torch = {ratio:.3f} (target <= 1.0)")
    prims = bench_core.interleaved_ms(primitive_steps(), rounds=args.rounds, repeat=4, number=5)
    results["conv2d_primitives_ms"] = prims
    for what in ("conv2d", "both gradients"):
        ratio = prims[f"fastnn {what}"] / prims[f"torch {what}"]
        print(f"  second conv, {what}: fastnn {prims[f'fastnn {what}']:.2f} ms, PyTorch "
              f"{prims[f'torch {what}']:.2f} ms; ratio {ratio:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
