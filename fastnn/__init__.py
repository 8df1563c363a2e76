"""fastnn: one model code, any device, through plug-in backends.

Importing fastnn imports no backend: backends are found through the
``fastnn.backends`` entry-point group and loaded the first time they are used.
"""

import fastnn.ops  # noqa: F401  (the tensor ops; binds Tensor operators)
from fastnn import accelerator, amp, cpu, cuda, functional, return_types  # noqa: E402
from fastnn import derivatives as _derivatives
from fastnn.api.certificates import UncertifiedBackendWarning
from fastnn.api.device import (
    Device,
    DeviceSpec,
    get_default_device,
    get_device,
    set_default_device,
    use,
)
from fastnn.api.dtypes import (
    DType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from fastnn.api.errors import BackendError, DeviceMismatchError
from fastnn.api.fallback import fallback_stats
from fastnn.api.registry import backends
from fastnn.autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from fastnn.autograd import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_anomaly_enabled,
    set_grad_enabled,
)
from fastnn.ops.legacy_tensors import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from fastnn.ops.random_ops import default_generator, manual_seed
from fastnn.ops.table import TOP as _TOP  # noqa: E402  (fnn.NAME where PyTorch has torch.NAME)
from fastnn.ops.tensor import Tensor, full, ones, rand, randn, tensor, zeros
from fastnn.settings import (
    Size,
    are_deterministic_algorithms_enabled,
    channels_last,
    channels_last_3d,
    contiguous_format,
    get_num_interop_threads,
    get_num_threads,
    is_storage,
    layout,
    memory_format,
    preserve_format,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    strided,
    use_deterministic_algorithms,
)

globals().update(_TOP)
bool = bool_  # noqa: A001  (fnn.bool, as torch.bool)
"""The bool dtype (``fnn.bool_``), spelt as PyTorch's ``torch.bool``."""
float = float32  # noqa: A001  (PyTorch's dtype aliases)
"""``fnn.float32``, spelt as PyTorch's ``torch.float``."""
double = float64
"""``fnn.float64``, spelt as PyTorch's ``torch.double``."""
half = float16
"""``fnn.float16``, spelt as PyTorch's ``torch.half``."""
long = int64
"""``fnn.int64``, spelt as PyTorch's ``torch.long``."""
int = int32  # noqa: A001
"""``fnn.int32``, spelt as PyTorch's ``torch.int``."""
short = int16
"""``fnn.int16``, spelt as PyTorch's ``torch.short``."""
dtype = DType
"""The class of fnn.float32, fnn.int64, ..., spelt as PyTorch's ``torch.dtype``
(``isinstance(d, torch.dtype)``, ``Optional[torch.dtype]`` annotations)."""
pi = __import__("math").pi
"""The Python float pi, as ``torch.pi``."""
e = __import__("math").e
"""The Python float e, as ``torch.e``."""
inf = __import__("math").inf
"""The Python float infinity, as ``torch.inf``."""
nan = __import__("math").nan
"""The Python float NaN, as ``torch.nan``."""
newaxis = None
"""``x[:, fnn.newaxis]``, as ``torch.newaxis`` (NumPy's spelling of None)."""
device = DeviceSpec
"""``fnn.device("cuda:1")``: a device named without loading its backend, as ``torch.device``
(see :class:`DeviceSpec`)."""
__import__("fastnn.settings").settings.backend_switches(backends)  # torch.backends.cudnn...
_VERSION = "0.1.0"  # only where no metadata is installed (a bare checkout on sys.path)


def _installed_version() -> str:
    """The version of the installed distribution fastnn-core (pyproject.toml's version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastnn-core")
    except PackageNotFoundError:
        return _VERSION


__version__ = _installed_version()
"""The installed fastnn-core's version (``fastnn --version`` prints it)."""

# the submodules loaded on first use (__getattr__ below), to keep import light
_SUBMODULES = ("nn", "optim", "data", "utils", "linalg", "special", "testing", "distributions",
               "func", "distributed", "onnx", "profiler", "compiler", "jit", "version",
               "multiprocessing", "serialization")

_LAZY = {  # name -> the module it is loaded from on first use (__getattr__ below)
    "save": "fastnn.checkpoint", "load": "fastnn.checkpoint",
    "compile": "fastnn.capture", "CaptureError": "fastnn.capture",
    "vmap": "fastnn.func",  # PyTorch's torch.vmap is torch.func.vmap
    **dict.fromkeys(("ShadowMismatch", "ShadowWarning", "shadow", "shadow_report"),
                    "fastnn.shadowing"),
}

__all__ = [
    "BackendError", "DType", "Device", "DeviceMismatchError", "Tensor", "backends",
    "bfloat16", "bool", "bool_", "detect_anomaly", "enable_grad", "fallback_stats", "float16",
    "float32", "float64", "full", "functional", "get_device", "int8", "int16", "int32", "int64",
    "uint8",
    "get_default_device", "set_default_device",
    "is_grad_enabled", "manual_seed", "default_generator", "return_types",
    "memory_format", "contiguous_format", "channels_last", "channels_last_3d", "layout",
    "strided",
    "preserve_format",
    "no_grad", "ones", "rand", "randn", "tensor", "use", "zeros",
    # PyTorch's spellings and module layout (import fastnn as torch)
    "BoolTensor", "ByteTensor", "CharTensor", "ShortTensor", "DoubleTensor", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor",
    "DeviceSpec", "accelerator", "amp", "cpu", "cuda", "device", "double", "dtype", "float",
    "get_default_dtype", "half", "int", "long", "short", "set_default_dtype", "set_grad_enabled",
    "Size", "are_deterministic_algorithms_enabled", "get_num_threads", "set_num_threads",
    "get_num_interop_threads", "set_num_interop_threads",
    "use_deterministic_algorithms", "is_storage", "set_flush_denormal",
    "inference_mode", "is_inference_mode_enabled", "is_anomaly_enabled", "set_anomaly_enabled",
    "autocast", "clear_autocast_cache", "get_autocast_dtype", "is_autocast_cache_enabled",
    "is_autocast_enabled", "set_autocast_cache_enabled", "set_autocast_dtype",
    "set_autocast_enabled", "get_autocast_gpu_dtype", "get_autocast_cpu_dtype",
    "is_autocast_cpu_enabled",
    *(name for name in _SUBMODULES if name != "data"),  # (fastnn.data: torch.utils.data)
    "UncertifiedBackendWarning", "pi", "e", "inf", "nan", "newaxis", *_LAZY,
]
__all__ += sorted(set(_TOP) - set(__all__))


def __getattr__(name):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"fastnn.{name}")
    if name == "random":  # torch.random: manual_seed, seed, get/set_rng_state, fork_rng
        return importlib.import_module("fastnn.ops.random_ops")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _NOT_HERE:
        raise AttributeError(f"module 'fastnn' has no attribute {name!r}: PyTorch's "
                             f"torch.{name} {_NOT_HERE[name]}")
    if name in _SPARSE:
        raise AttributeError(f"module 'fastnn' has no attribute {name!r}: PyTorch's "
                             f"torch.{name} makes or needs sparse tensors, and fastnn's "
                             f"tensors are dense only (no sparse layouts); keep the data "
                             f"dense")
    if name in _COMPLEX:
        raise AttributeError(f"module 'fastnn' has no attribute {name!r}: fastnn has no "
                             f"complex dtypes. Rotary embeddings (torch.polar, "
                             f"view_as_complex) have a real form: rotate the pairs with "
                             f"cos and sin (x1 * cos - x2 * sin, x1 * sin + x2 * cos)")
    raise AttributeError(f"module 'fastnn' has no attribute {name!r}")


# PyTorch's submodules that fastnn does not have, and why (an AttributeError says so)
_NOT_HERE = {
    "fft": "works on complex tensors, and fastnn has no complex dtypes",
    "sparse": "works on sparse tensors, and fastnn's tensors are dense only",
    "hub": "downloads models; fastnn loads their torch.save files with fnn.load",
    **dict.fromkeys(("fx", "export", "_dynamo", "library", "overrides"),
                    "works on PyTorch's own graph and operator machinery, which fastnn does "
                    "not have (fnn.compile captures a step)"),
    **dict.fromkeys(("ao", "quantization"), "quantizes models, which fastnn does not"),
    "masked": "works on masked tensors, which fastnn does not have",
    "signal": "has window functions only; fastnn has hann_window and its siblings at the "
              "top level",
}

_SPARSE = {"sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "sparse_compressed_tensor", "sparse_coo", "sparse_csr",
           "sparse_csc", "sparse_bsr", "sparse_bsc", "smm", "hspmm", "sspaddmm"}  # PyTorch's

_COMPLEX = {"polar", "view_as_complex", "view_as_real", "complex", "complex32", "complex64",
            "complex128", "cfloat", "cdouble", "chalf"}  # PyTorch's complex names


def _stand_in(name: str, target: str):
    """A module at ``name`` that loads ``target`` on first use and gives its names (so
    that a layer can show, at PyTorch's path, a module of a layer above it without
    importing it: ``fastnn.autograd.profiler`` is fastnn.profiler.legacy)."""
    import importlib
    import sys
    import types

    stand_in = types.ModuleType(name, f"PyTorch's {name.replace('fastnn', 'torch')}: the "
                                      f"names of {target}, loaded on first use.")

    def __getattr__(attr):
        if attr.startswith("__") and attr != "__all__":  # (what scans sys.modules asks)
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        module = importlib.import_module(target)
        value = getattr(module, attr)  # AttributeError for a name it lacks
        vars(stand_in).update({k: getattr(module, k) for k in module.__all__})
        return value

    stand_in.__getattr__ = __getattr__
    stand_in.__dir__ = lambda: sorted(importlib.import_module(target).__all__)
    sys.modules[name] = stand_in
    package, _, attr = name.rpartition(".")
    setattr(sys.modules[package], attr, stand_in)


# torch.autograd.profiler: the profiler sits above autograd, so autograd gets a stand-in
_stand_in("fastnn.autograd.profiler", "fastnn.profiler.legacy")

# gradcheck, jacobian, ... under PyTorch's paths in fastnn.autograd (they need tensor ops,
# a layer above the tape, so they are bound in from here)
_derivatives.install()

if __import__("os").environ.get("FASTNN_SHADOW"):  # the whole process shadowed
    __import__("importlib").import_module("fastnn.shadowing").from_environment()
