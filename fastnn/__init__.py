"""fastnn: one model code, any device, through plug-in backends.

Importing fastnn imports no backend: backends are found through the
``fastnn.backends`` entry-point group and loaded the first time they are used.
"""

import fastnn.ops  # noqa: F401  (the tensor ops; binds Tensor operators)
from fastnn import functional, return_types  # noqa: E402
from fastnn.api.device import Device, get_device, use
from fastnn.api.dtypes import DType, bfloat16, bool_, float16, float32, float64, int32, int64
from fastnn.api.errors import BackendError, DeviceMismatchError
from fastnn.api.fallback import fallback_stats
from fastnn.api.registry import backends
from fastnn.autograd import detect_anomaly, enable_grad, is_grad_enabled, no_grad
from fastnn.ops.table import TOP as _TOP  # noqa: E402  (fnn.NAME where PyTorch has torch.NAME)
from fastnn.ops.tensor import Tensor, full, manual_seed, ones, rand, randn, tensor, zeros

globals().update(_TOP)
bool = bool_  # noqa: A001  (fnn.bool, as torch.bool)
"""The bool dtype (``fnn.bool_``), spelt as PyTorch's ``torch.bool``."""
__version__ = "0.1.0"

__all__ = [
    "BackendError", "DType", "Device", "DeviceMismatchError", "Tensor", "backends",
    "bfloat16", "bool", "bool_", "detect_anomaly", "enable_grad", "fallback_stats", "float16",
    "float32", "float64", "full", "functional", "get_device", "int32", "int64",
    "is_grad_enabled", "manual_seed", "return_types",
    "no_grad", "ones", "rand", "randn", "tensor", "use", "zeros",
    "load", "nn", "optim", "save",  # loaded on first use (__getattr__ below)
]
__all__ += sorted(set(_TOP) - set(__all__))


def __getattr__(name):
    # nn, optim and the checkpoint functions load on first use to keep import light
    import importlib

    if name in ("nn", "optim"):
        return importlib.import_module(f"fastnn.{name}")
    if name in ("save", "load"):
        return getattr(importlib.import_module("fastnn.checkpoint"), name)
    raise AttributeError(f"module 'fastnn' has no attribute {name!r}")
