"""Transcendental unary ops (exp, erf, tanh, GELU...) on contiguous floating arrays, one
vector of elements per work-item (``kernels/unary_vec.cl``): PoCL runs these builtins
once per element from a work-item loop, 8-13x slower than once per vector. Small arrays
keep the flat launch, whose host cost is lower."""

from __future__ import annotations

import numpy as np

from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray

FILE = "unary_vec.cl"
OPS = ("exp", "log", "sqrt", "erf", "tanh", "sigmoid", "gelu", "silu", "softplus", "sin",
       "cos")
MIN_SIZE = 4096  # below it the launch's host time outweighs the kernel's
_I = np.int32


def serves(op: str, size: int, dtype: str) -> bool:
    """Whether :func:`launch` serves ``op`` on a contiguous array of ``size`` and ``dtype``."""
    return size >= MIN_SIZE and dtype in ("float32", "float64") and op in OPS


def wanted(op: str, x: CLArray) -> bool:
    """Whether :func:`launch` serves ``op`` on ``x``."""
    return serves(op, x.size, x.dtype) and x.is_contiguous


def launch(op: str, x: CLArray) -> CLArray:
    """op(x) into a new contiguous array; x contiguous float32/float64 (see wanted)."""
    dev = x.dev
    width = 32 // NP_TYPES[x.dtype].itemsize
    defines = (("T", CL_TYPES[x.dtype]), ("VW", width), ("OP", OPS.index(op)))
    kernel = dev.kernel(FILE, "k_unary_vec", defines, [None, None, _I, _I])
    out = dev.empty(x.shape, x.dtype)
    n = x.size
    kernel(dev.queue, (-(-n // width),), None, out.data, x.data, x.offset, n)
    return out
