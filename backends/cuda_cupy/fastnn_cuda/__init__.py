"""fastnn's CUDA backend: the hook specification on cupy arrays, plus fused CUDA kernels.

Registered as ``cuda`` in the ``fastnn.backends`` entry-point group (devices
``cuda``, ``cuda:N``). Primitives are cupy calls (matmul through cuBLAS);
the fused hooks and the optimizer steps are raw kernels from ``cu/*.cu``,
compiled with NVRTC on first use. Importing this package never fails: without
cupy or a driver, :func:`backend_probe` reports why, with the install hint.

Layout: ``primitives.py`` (elementwise, reductions, data movement, matmul),
``conv.py`` (im2col + GEMM), ``fused.py`` (softmax, cross-entropy, rms_div,
bias + activation, and the backward passes of the last two), ``optim.py``
(SGD/Adam/RMSProp in one launch), ``clip.py`` (gradient clipping's norm and scaling, a
launch per table of arrays), ``kernels.py`` (sources and compilation),
``launch.py`` (launch parameters), ``collectives.py`` (allreduce and broadcast
through NCCL), ``layers.py`` (pooling, batch norm, LSTM/GRU layers), ``capture.py`` and
``graph.py`` (``fnn.compile``'s programs as CUDA graphs), ``fused_program.py`` (fused
elementwise chains as generated kernels), ``gemm.py`` and ``cublas_lib.py`` (every matrix
product; cuBLAS called directly where cupy refuses to, in a capture), ``transfer.py``
(many arrays read to the host in one wait).
"""

from __future__ import annotations

import functools
import importlib

from fastnn.api import hookspec
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import _cupy

# the modules holding the hooks: the registry registers each of them
fastnn_hook_modules = tuple(f"fastnn_cuda.{name}" for name in (
    "collectives", "conv", "conv_2d", "fused", "indexing", "optim", "primitives", "capture",
    "layers", "fused_program", "sdpa", "norm_act", "linalg", "transfer", "clip"))


@hookimpl
def backend_probe():
    return _cupy.probe()


# Hooks whose first argument is a device array (or a list of them): with more than one
# GPU they run with the current device set to that array's device. Every hook is one but
# these, which are given a device index (and the collectives enter theirs themselves).
_HOST_SIDE = frozenset({"from_numpy", "to_numpy", "full", "uniform", "allreduce", "broadcast"})
_ON_ARRAY_DEVICE = [name for name in hookspec.HOOKS if name not in _HOST_SIDE]


def on_array_device(fn):
    """Wrap a hook so that it runs on the device of its first array argument.

    ``functools.wraps`` keeps the signature (pluggy reads it through
    ``__wrapped__``) and the ``@hookimpl`` marker.
    """
    device_type = _cupy.cupy.cuda.Device

    @functools.wraps(fn)
    def run(*args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()))
        if isinstance(first, (list, tuple)):
            first = first[0] if first else None
        device = getattr(first, "device", None)
        if device is None:
            return fn(*args, **kwargs)
        with device_type(device.id):
            return fn(*args, **kwargs)

    return run


def _guard_devices(namespace: dict) -> None:
    """Wrap, in place, the hooks of ``namespace`` (a hook module's globals) that take arrays."""
    for name in _ON_ARRAY_DEVICE:
        if name in namespace:
            namespace[name] = on_array_device(namespace[name])


if _cupy.device_count() > 1:  # one GPU: the current device is always the right one
    for _module in fastnn_hook_modules:
        _guard_devices(vars(importlib.import_module(_module)))
