"""fastnn's OpenCL backend: every primitive as OpenCL C kernels, run through pyopencl.

Registered as ``opencl`` in the ``fastnn.backends`` entry-point group. It runs
on any OpenCL device (AMD, Intel, NVIDIA and Apple GPUs) and on the host CPU
through PoCL (``pip install "pyopencl[pocl]"``). Arrays are
:class:`~fastnn_opencl.runtime.CLArray` views of pooled device buffers.

Importing this module does not import pyopencl: the probe does, so a machine
without pyopencl or without an OpenCL platform gets a clear "unavailable"
record instead of an import error.
"""

from __future__ import annotations

from fastnn.api.hookspec import hookimpl
from fastnn_opencl.discovery import COMPILER_HINT, INSTALL_HINT

# the modules holding the hooks: the registry registers each of them (importing them does
# not import pyopencl either: each reaches it through runtime when a hook first runs)
fastnn_hook_modules = tuple(f"fastnn_opencl.{name}" for name in (
    "collectives", "conv", "conv_2d", "elementwise", "fused", "indexing", "linalg", "misc",
    "optim", "reduce", "fused_program", "launch_list", "transfer",
    "recurrent", "pooling", "batchnorm", "attention", "norm_act", "clip"))


def probe() -> dict:
    """What :func:`backend_probe` reports; never raises."""
    record = {"available": False, "reason": "", "devices": [], "dtypes": [], "version": "?"}
    try:
        from fastnn_opencl import discovery, runtime

        pyopencl = discovery.cl()
        record["version"] = f"pyopencl {pyopencl.VERSION_TEXT}"
    except ImportError as exc:
        record["reason"] = f"pyopencl is not installed ({exc}); {INSTALL_HINT}"
        return record
    except ValueError as exc:  # a setting of ours that is wrong
        record["reason"] = str(exc)
        return record
    try:
        devices = runtime.devices()
    except Exception as exc:  # e.g. clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR
        record["reason"] = f"no OpenCL platform ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
        return record
    if not devices and discovery.unusable:
        broken = "; ".join(f"{name}: {why}" for name, why in discovery.unusable.items())
        record["reason"] = (f"no OpenCL device can build kernels ({broken}); {COMPILER_HINT}")
        return record
    if not devices:
        record["reason"] = f"OpenCL platforms exist but expose no device; {INSTALL_HINT}"
        return record
    record["available"] = True
    record["devices"] = [discovery.describe(d) for d in devices]
    fp64 = ["float64"] if discovery.has_fp64(devices[0]) else []
    record["dtypes"] = ["float32", *fp64, *runtime.INTEGERS, "bool"]
    return record


@hookimpl
def backend_probe():
    return probe()
