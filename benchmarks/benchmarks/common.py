"""What every benchmark module shares: the backends to run on and how to wait for them.

Benchmarks are parameterised over the installed backends that are available
on this machine (``fastnn.backends()``), so installing a backend adds its
column to every benchmark without editing this suite.
"""

from __future__ import annotations

import numpy as np

import fastnn as fnn

BACKENDS = [record.name for record in fnn.backends() if record.available] or ["cpu"]
_HOST = {record.name: record.host_memory for record in fnn.backends()}


def sync(t) -> None:
    """Wait until ``t`` is computed: host backends compute eagerly; others read one value back."""
    if not _HOST.get(t.device.type, False):
        t.sum().item()


def host_array(shape, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Standard-normal float32 data, the same for every backend."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def mlp(sizes, device: str):
    """Sequential Linear/ReLU stack, seeded, on ``device``."""
    from fastnn import nn

    fnn.manual_seed(0)
    layers = []
    with fnn.use(device):
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(n_in, n_out))
            if i < len(sizes) - 2:
                layers.append(nn.Activation("relu"))
        return nn.Sequential(*layers)
