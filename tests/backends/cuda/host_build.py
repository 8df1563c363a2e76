"""Building the CUDA kernel sources as host C++ for the host-run tests (no GPU).

Shared by test_cuda_kernels_on_host.py (threads run one after another),
test_cuda_column_kernels_threaded.py and test_cuda_norm_act_on_host.py (threads
as OS threads with barriers): the CUDA keywords and bit casts the sources use,
the g++ call, and the conversion of Python arguments to the kernels' C types.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import kernels, launch

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
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
// rounded products that are never contracted into an fma (a volatile store rounds)
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
"""


# Threads run one after another: enough for kernels without cross-thread exchange, and
# for the column-tiled ones with one warp per block (test_cuda_kernels_on_host.py).
SERIAL_SHIM = CUDA_KEYWORDS + r"""
struct fastnn_dim3 { unsigned x, y, z; };
static fastnn_dim3 threadIdx, blockIdx, blockDim, gridDim;
static inline void __syncthreads() {}
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
extern "C" void fastnn_set_index3(unsigned bx, unsigned by, unsigned bz, unsigned tx,
                                  unsigned ty, unsigned dx, unsigned dy, unsigned gx,
                                  unsigned gy, unsigned gz) {
    blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz; threadIdx.x = tx; threadIdx.y = ty;
    blockDim.x = dx; blockDim.y = dy; gridDim.x = gx; gridDim.y = gy; gridDim.z = gz;
}
"""

SERIAL_SOURCES = ("activations.cu", "swish.cu", "conv.cu", "optim.cu", "optim_more.cu",
                  "softmax.cu", "reduce.cu")


def require_compiler() -> None:
    """Skip the calling test module (or test) where g++ cannot build the kernels."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: cannot build the kernels for the host",
                    allow_module_level=True)


def build_serial(directory) -> dict:
    """{source name: library} of the kernel sources under :data:`SERIAL_SHIM`."""
    return {name: compile_library(directory, name, SERIAL_SHIM + kernels.source(name).replace(
        '#line 1 "', '#line 1 "host_')) for name in SERIAL_SOURCES}


def run_serial(libs, base, dtype, grid, block, c_args) -> None:
    """Every block (x, y, z) and thread (x, y) of a launch of ``base``, one after another."""
    lib = libs[kernels.KERNEL_FILES[base]]
    fn = getattr(lib, kernels.kernel_name(base, dtype))
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    dx, dy = (tuple(block) + (1,))[:2]
    for bz in range(gz):
        for by in range(gy):
            for bx in range(gx):
                for ty in range(dy):
                    for tx in range(dx):
                        lib.fastnn_set_index3(bx, by, bz, tx, ty, dx, dy, gx, gy, gz)
                        fn(*c_args)


# Every thread of a block an OS thread: ``__syncthreads`` a pthread barrier, ``__shared__``
# memory one static array (blocks run one after another), and warp shuffles that swap
# values through one slot per thread between two warp-wide barriers; so a missing barrier
# or a wrong partial index gives wrong sums, without a GPU. Blocks are 1-D (threadIdx.x).
THREADED_SHIM = CUDA_KEYWORDS + r"""
#include <pthread.h>
#include <thread>
#include <vector>
struct fastnn_dim3 { unsigned x, y, z; };
static thread_local fastnn_dim3 threadIdx;
static fastnn_dim3 blockIdx, blockDim, gridDim;
static pthread_barrier_t fastnn_barrier, fastnn_warp_barrier[32];
static inline void __syncthreads() { pthread_barrier_wait(&fastnn_barrier); }
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int mask) {
    static T slots[1024];
    const unsigned t = threadIdx.x, w = t / 32;
    slots[t] = v;
    pthread_barrier_wait(&fastnn_warp_barrier[w]);
    const T r = slots[(t & ~31u) | ((t % 32) ^ (unsigned)mask)];
    pthread_barrier_wait(&fastnn_warp_barrier[w]);
    return r;
}
// each block's threads call `body` (a launch's kernel with its arguments) as OS threads
extern "C" void fastnn_run_threaded(unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                                    void (*body)(void)) {
    blockDim.x = threads; blockDim.y = 1; blockDim.z = 1;
    gridDim.x = gx; gridDim.y = gy; gridDim.z = gz;
    for (unsigned bz = 0; bz < gz; ++bz)
        for (unsigned by = 0; by < gy; ++by)
            for (unsigned bx = 0; bx < gx; ++bx) {
                blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
                pthread_barrier_init(&fastnn_barrier, nullptr, threads);
                for (unsigned w = 0; w < threads / 32; ++w)
                    pthread_barrier_init(&fastnn_warp_barrier[w], nullptr, 32);
                std::vector<std::thread> pool;
                for (unsigned t = 0; t < threads; ++t)
                    pool.emplace_back([=] { threadIdx.x = t; threadIdx.y = 0; body(); });
                for (auto& th : pool) th.join();
                pthread_barrier_destroy(&fastnn_barrier);
                for (unsigned w = 0; w < threads / 32; ++w)
                    pthread_barrier_destroy(&fastnn_warp_barrier[w]);
            }
}
"""

_THUNK = ctypes.CFUNCTYPE(None)


def build_threaded(directory, names) -> dict:
    """{source name: library} of the kernel sources ``names`` under :data:`THREADED_SHIM`."""
    return {name: compile_library(directory, f"threaded_{name.split('.')[0]}",
                                  THREADED_SHIM + kernels.source(name).replace(
                                      '#line 1 "', '#line 1 "host_'), flags=("-pthread",))
            for name in names}


def run_threaded(libs, base, dtype, grid, block, c_args) -> None:
    """A launch of ``base`` with every thread of a block an OS thread (1-D blocks of whole
    warps; the kernel is called through ctypes, which lets go of the GIL meanwhile)."""
    lib = libs[kernels.KERNEL_FILES[base]]
    fn = getattr(lib, kernels.kernel_name(base, dtype))
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    threads, *rest = tuple(block)
    if any(r != 1 for r in rest) or threads % 32:
        raise ValueError(f"run_threaded takes 1-D blocks of whole warps, not {block}")
    body = _THUNK(lambda: fn(*c_args))
    lib.fastnn_run_threaded(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(gz),
                            ctypes.c_uint(threads), body)


def launch_on_host(monkeypatch, libs, serial=(), serial_libs=None) -> list:
    """Route the cuda backend's kernel launches (``kernels.function``) to the host builds
    ``libs``: each launch runs with every thread of a block an OS thread, or one thread
    after another for the kernels named in ``serial`` (from ``serial_libs`` where given:
    the serial builds of a source whose other kernels run threaded). Returns the list the
    names of the launched kernels are appended to, in order."""
    launches: list = []

    def function(base, dtype, device_id):
        assert device_id == 0

        def run(grid, block, args):
            launches.append(base)
            if base in serial:
                runner, found = run_serial, libs if serial_libs is None else serial_libs
            else:
                runner, found = run_threaded, libs
            runner(found, base, str(dtype), grid, block, [c_arg(a) for a in args])
        return run

    monkeypatch.setattr(kernels, "function", function)
    return launches


def launch_serially(monkeypatch, libs, **sizes) -> list:
    """Route every kernel launch to the serial host builds ``libs`` (one thread after
    another), with small launch shapes so that the grid-stride loops wrap: 8 threads a
    flat block, at most 3 blocks, and ``sizes`` (other ``launch`` constants) set too.
    Returns the list the launched kernels' names are appended to, in order."""
    launches: list = []

    def function(base, dtype, device_id):
        def run(grid, block, args):
            launches.append(base)
            run_serial(libs, base, str(dtype), grid, block, [c_arg(a) for a in args])
        return run

    monkeypatch.setattr(kernels, "function", function)
    for name, value in {"FLAT_THREADS": 8, "FLAT_MAX_BLOCKS": 3, **sizes}.items():
        monkeypatch.setattr(launch, name, value)
    return launches


def _host_has_fma() -> bool:
    try:
        with open("/proc/cpuinfo") as info:
            return any(line.startswith("flags") and " fma" in line for line in info)
    except OSError:
        return False


# NOTE: nvcc and NVRTC contract a * b + c into one fused multiply-add by default
# (--fmad=true), which skips the rounding of a * b; g++ in ISO C++ mode never does. Where
# the CPU has FMA the host builds contract too, so that a kernel whose result depends on
# that rounding fails here as it does on a GPU (g++ contracts only in the pass that
# -fexpensive-optimizations turns on, -O2 and up).
CONTRACT_LIKE_NVCC = (("-mfma", "-ffp-contract=fast", "-fexpensive-optimizations")
                      if _host_has_fma() else ())


def compile_library(directory, stem: str, text: str, flags=()) -> ctypes.CDLL:
    """g++ ``text`` into ``directory/stem.so`` with the kernels' -D options, and load it."""
    src, out = directory / f"{stem}.cpp", directory / f"{stem}.so"
    src.write_text(text)
    defines = [o for o in kernels.COMPILE_OPTIONS if o.startswith("-D")]
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-std=c++14", *CONTRACT_LIKE_NVCC,
                    *flags, *defines, "-o", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(out))


class _StepTable(ctypes.Structure):
    """``struct StepTable`` as raw bytes: passed by value, as cupy passes the record."""

    _fields_ = [("raw", ctypes.c_byte * launch.STEP_TABLE_DTYPE.itemsize)]


def c_arg(value):
    """A kernel argument as its C type: arrays as pointers, floats as double, ints as i64,
    an optimizer step table (a size-1 record) by value."""
    if isinstance(value, np.ndarray) and value.dtype == launch.STEP_TABLE_DTYPE:
        return _StepTable.from_buffer_copy(value.tobytes())
    if isinstance(value, np.ndarray):
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, float):
        return ctypes.c_double(value)
    return ctypes.c_longlong(value)


_DEVICE = SimpleNamespace(id=0)


class DevArray(np.ndarray):
    """A host array with the two cupy attributes the hooks read (``.device.id`` and
    ``.data.ptr``)."""

    @property
    def device(self):
        return _DEVICE

    @property
    def data(self):
        return SimpleNamespace(ptr=self.ctypes.data)
