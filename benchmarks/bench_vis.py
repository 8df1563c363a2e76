"""Issue 21's vision and normalisation layers, fastnn cpu vs PyTorch CPU, one thread each.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_vis.py [--rounds N]

Each case is one forward and backward (sum of the output times a fixed random tensor)
of a layer on a small image batch, fastnn and PyTorch in turns in this one process
(``bench_core.interleaved_ms``); ratios are fastnn time / PyTorch time. A last line times
a ConvTranspose2d training step through the composite (zeros inserted, then conv2d)
against the path that runs the backend's conv2d_grad_input hook forward (the one
F.conv_transpose2d takes where it can).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402

CASES = {  # name: (layer constructor arguments (same for both libraries), input shape)
    "ConvTranspose2d": (("ConvTranspose2d", (16, 8, 4), dict(stride=2, padding=1)),
                        (16, 16, 16, 16)),
    "Conv3d": (("Conv3d", (4, 8, 3), dict(padding=1)), (4, 4, 8, 16, 16)),
    "Upsample bilinear x2": (("Upsample", (), dict(scale_factor=2, mode="bilinear")),
                             (16, 16, 32, 32)),
    "Upsample nearest x2": (("Upsample", (), dict(scale_factor=2)), (16, 16, 32, 32)),
    "GroupNorm": (("GroupNorm", (4, 16), {}), (16, 16, 32, 32)),
    "InstanceNorm2d": (("InstanceNorm2d", (16,), dict(affine=True)), (16, 16, 32, 32)),
    "LayerNorm([32, 32])": (("LayerNorm", ([32, 32],), {}), (16, 16, 32, 32)),
    "PixelShuffle": (("PixelShuffle", (2,), {}), (16, 64, 16, 16)),
}


def _step(lib, spec, shape, seed=0):
    name, args, kwargs = spec
    rng = np.random.default_rng(seed)
    x_host = rng.standard_normal(shape).astype(np.float32)
    if lib == "torch":
        import torch

        torch.manual_seed(seed)
        layer = getattr(torch.nn, name)(*args, **kwargs)
        x = torch.tensor(x_host, requires_grad=True)
        weight = torch.tensor(rng.standard_normal(layer(x).shape).astype(np.float32))
    else:
        import fastnn as fnn
        from fastnn import nn

        layer = getattr(nn, name)(*args, **kwargs)
        x = fnn.tensor(x_host, requires_grad=True)
        weight = fnn.tensor(rng.standard_normal(layer(x).shape).astype(np.float32))

    def step():
        x.grad = None
        (layer(x) * weight).sum().backward()

    return step


def transposed_steps():
    """A ConvTranspose2d training step's two ways: the composite against the hook path."""
    import fastnn as fnn
    from fastnn.ops import conv_transpose

    rng = np.random.default_rng(1)
    x = fnn.tensor(rng.standard_normal((16, 16, 16, 16)).astype(np.float32), requires_grad=True)
    w = fnn.tensor(rng.standard_normal((16, 8, 4, 4)).astype(np.float32), requires_grad=True)
    g = fnn.tensor(rng.standard_normal((16, 8, 32, 32)).astype(np.float32))
    args = ((2, 2), (1, 1), (0, 0), 1, (1, 1))

    def step(fn):
        def run():
            x.grad = w.grad = None
            (fn(x, w, *args) * g).sum().backward()

        return run

    return {"composite": step(conv_transpose.composite_transpose),
            "conv2d_grad_input hook": step(conv_transpose.transpose_raw)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    results = {}
    for label, (spec, shape) in CASES.items():
        steps = {lib: _step(lib, spec, shape) for lib in ("fastnn", "torch")}
        ms = bench_core.interleaved_ms(steps, rounds=args.rounds, repeat=3, number=3)
        ratio = ms["fastnn"] / ms["torch"]
        results[label] = dict(ms, ratio=ratio)
        print(f"{label:22s} {list(shape)!s:20s} fastnn {ms['fastnn']:8.2f} ms  PyTorch "
              f"{ms['torch']:7.2f} ms  fastnn / torch = {ratio:5.2f}")
    ms = bench_core.interleaved_ms(transposed_steps(), rounds=args.rounds, repeat=3, number=3)
    results["conv_transpose2d step"] = ms
    print(f"ConvTranspose2d step: composite {ms['composite']:.2f} ms, conv2d_grad_input "
          f"hook {ms['conv2d_grad_input hook']:.2f} ms (ratio "
          f"{ms['composite'] / ms['conv2d_grad_input hook']:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
