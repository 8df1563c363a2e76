"""Building the CUDA kernel sources as host C++ for the host-run tests (no GPU).

Shared by test_cuda_kernels_on_host.py (threads run one after another) and
test_cuda_column_kernels_threaded.py (threads as OS threads with barriers):
the CUDA keywords and bit casts the sources use, the g++ call, and the
conversion of Python arguments to the kernels' C types.
"""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
from fastnn_cuda import kernels

# What every shim defines; each test adds threadIdx & co., __syncthreads and shuffles.
CUDA_KEYWORDS = r"""
#include <math.h>
#include <string.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
"""


def compile_library(directory, stem: str, text: str, flags=()) -> ctypes.CDLL:
    """g++ ``text`` into ``directory/stem.so`` with the kernels' -D options, and load it."""
    src, out = directory / f"{stem}.cpp", directory / f"{stem}.so"
    src.write_text(text)
    defines = [o for o in kernels.COMPILE_OPTIONS if o.startswith("-D")]
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-std=c++14", *flags, *defines,
                    "-o", str(out), str(src)], check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(out))


def c_arg(value):
    """A kernel argument as its C type: arrays as pointers, floats as double, ints as i64."""
    if isinstance(value, np.ndarray):
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, float):
        return ctypes.c_double(value)
    return ctypes.c_longlong(value)
