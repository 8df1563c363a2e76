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
from fastnn_opencl.collectives import allreduce, broadcast  # noqa: F401
from fastnn_opencl.conv import conv1d, conv1d_grad_input, conv1d_grad_weight  # noqa: F401
from fastnn_opencl.conv_2d import conv2d, conv2d_grad_input, conv2d_grad_weight  # noqa: F401
from fastnn_opencl.elementwise import (  # noqa: F401
    abs,
    add,
    astype,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cos,
    div,
    equal,
    erf,
    exp,
    floor,
    floor_divide,
    gelu,
    greater,
    leaky_relu,
    less,
    log,
    maximum,
    minimum,
    mul,
    neg,
    pow,
    relu,
    sigmoid,
    sign,
    silu,
    sin,
    softplus,
    sqrt,
    sub,
    tanh,
    where,
)
from fastnn_opencl.fused import (  # noqa: F401
    bias_act,
    bias_act_backward,
    log_softmax,
    rms_div,
    softmax,
    softmax_cross_entropy,
    softmax_cross_entropy_backward,
)
from fastnn_opencl.indexing import (  # noqa: F401
    cat,
    cumsum,
    gather,
    index_select,
    prod,
    scatter_add,
    slice,
    slice_scatter,
)
from fastnn_opencl.linalg import matmul  # noqa: F401
from fastnn_opencl.misc import (  # noqa: F401
    broadcast_to,
    contiguous,
    from_numpy,
    full,
    one_hot,
    reshape,
    to_numpy,
    transpose,
    uniform,
)
from fastnn_opencl.optim import (  # noqa: F401
    adagrad_step,
    adam_step,
    amsgrad_step,
    nadam_step,
    radam_step,
    rmsprop_momentum_step,
    rmsprop_step,
    sgd_step,
)
from fastnn_opencl.reduce import argmax, max, mean, sum  # noqa: F401
from fastnn_opencl.runtime import INSTALL_HINT


def probe() -> dict:
    """What :func:`backend_probe` reports; never raises."""
    record = {"available": False, "reason": "", "devices": [], "dtypes": [], "version": "?"}
    try:
        from fastnn_opencl import runtime

        pyopencl = runtime.cl()
        record["version"] = f"pyopencl {pyopencl.VERSION_TEXT}"
    except ImportError as exc:
        record["reason"] = f"pyopencl is not installed ({exc}); {INSTALL_HINT}"
        return record
    try:
        devices = runtime.devices()
    except Exception as exc:  # e.g. clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR
        record["reason"] = f"no OpenCL platform ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
        return record
    if not devices:
        record["reason"] = f"OpenCL platforms exist but expose no device; {INSTALL_HINT}"
        return record
    record["available"] = True
    record["devices"] = [runtime.describe(d) for d in devices]
    fp64 = ["float64"] if runtime.has_fp64(devices[0]) else []
    record["dtypes"] = ["float32", *fp64, "int32", "int64", "bool"]
    return record


@hookimpl
def backend_probe():
    return probe()
