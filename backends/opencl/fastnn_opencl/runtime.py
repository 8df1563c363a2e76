"""OpenCL runtime: per-device state, the array type, kernel cache, buffer pool.

The devices themselves are found by :mod:`fastnn_opencl.discovery` (which also imports
pyopencl, on first use: :func:`cl` is its, here for the modules that import it from
here); ``opencl:N`` is entry N of its list, and :func:`state` the device's state.
"""

from __future__ import annotations

import math
import re
import threading
from importlib import resources

import numpy as np

from fastnn_opencl import discovery
from fastnn_opencl.discovery import _type_name, cl, has_fp64

CL_TYPES = {
    "float32": "float",
    "float64": "double",
    "uint8": "uchar",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "bool": "uchar",  # (as uint8: code that must tell them apart asks the dtype's name)
}
NP_TYPES = {name: np.dtype(name) for name in CL_TYPES}
INTEGERS = [name for name in CL_TYPES if NP_TYPES[name].kind in "iu"]
"""The integer dtypes, each with a kernel for the exact paths: elementwise, compare, cast,
index, copy, reduce, integer matmul."""


def unsigned_type(dtype: str) -> str:
    """The unsigned OpenCL type of an integer (or bool) dtype's width, where integer
    arithmetic wraps without C's undefined signed overflow."""
    ctype = CL_TYPES[dtype]
    return ctype if ctype.startswith("u") else "u" + ctype


MAX_NDIM = 8  # strided kernels pass shapes and strides as OpenCL int8 vectors

# ---------------------------------------------------------------- per-device state

_KERNEL_DIR = resources.files("fastnn_opencl") / "kernels"
_sources: dict[str, str] = {}


_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.cl)"[ \t]*$', re.MULTILINE)


def _expanded(filename: str, seen: set) -> str:
    """``kernels/filename`` with each ``#include "other.cl"`` line replaced by that file's
    expanded text (a file already included is left out: an include guard for free)."""
    seen.add(filename)

    def include(match) -> str:
        name = match.group(1)
        if name in seen:
            return f"// {name}: already included"
        return f"// ---- {name}\n" + _expanded(name, seen) + f"\n// ---- end of {name}"

    return _INCLUDE.sub(include, (_KERNEL_DIR / filename).read_text())


def source(filename: str) -> str:
    """The text of ``kernels/filename`` with ``kernels/common.cl`` in front.

    ``#include "other.cl"`` lines (a bare file name in ``kernels/``, on a line of its own)
    are expanded here, not by the OpenCL compiler: the program is built from one string
    whose text (and so PoCL's kernel cache key) changes with every included file, and no
    include path needs to reach the installed package's folder.
    """
    text = _sources.get(filename)
    if text is None:
        common = (_KERNEL_DIR / "common.cl").read_text()
        text = _sources[filename] = common + "\n" + _expanded(filename, {"common.cl"})
    return text


class _ThreadKernels(threading.local):
    """Each thread's own Kernel objects, by (file, name, defines); dropped when it ends."""

    def __init__(self):
        self.kernels: dict = {}


class DeviceState:
    """One device: its context, in-order queue, buffer pool and compiled kernels."""

    def __init__(self, device, index: int):
        pyopencl = cl()
        import pyopencl.tools as cltools

        self.index = index
        self.device = device
        self.name = device.name.strip()
        self.is_cpu = _type_name(device) == "CPU"
        self.fp64 = has_fp64(device)
        self.context = pyopencl.Context([device])
        self.queue = pyopencl.CommandQueue(self.context)
        # NOTE: one in-order queue, so a buffer handed back to the pool while
        # kernels that read it are still queued is only reused by later kernels.
        self.pool = cltools.MemoryPool(cltools.ImmediateAllocator(self.queue))
        self.compute_units = device.max_compute_units
        self.correct_div = bool(
            device.single_fp_config & pyopencl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
        )
        self.max_group = device.max_work_group_size
        self._vector_widths = {"float32": device.native_vector_width_float,
                               "float64": device.native_vector_width_double}
        # NOTE: a pyopencl.Kernel holds its arguments between set_args and the
        # enqueue, so one object shared by two threads enqueues the other thread's
        # buffers (wrong sums, PoCL crashes). Programs are built once and shared;
        # each thread gets its own Kernel objects from them.
        self._programs: dict = {}
        self._lock = threading.Lock()
        self._local = _ThreadKernels()

    def vector_width(self, dtype: str) -> int:
        """The device's native SIMD width in elements of ``dtype`` (16 floats with AVX-512)."""
        return self._vector_widths.get(dtype, 1)

    def check_dtype(self, dtype: str) -> None:
        if dtype not in CL_TYPES:
            raise TypeError(
                f"opencl: dtype {dtype} is not supported; use one of {', '.join(CL_TYPES)}"
            )
        if dtype == "float64" and not self.fp64:
            raise TypeError(
                f"opencl: device {self.name!r} lacks cl_khr_fp64, so float64 is unavailable "
                "there; use float32 (x.to(fastnn.float32)) or another device"
            )

    def kernel(self, filename: str, name: str, defines: tuple, arg_dtypes: list):
        """This thread's kernel ``name`` of ``filename`` built with ``defines`` (cached).

        The program is compiled once per device; the Kernel object (which holds
        the arguments of the launch being set up) is the calling thread's own.
        NOTE: the cache key leaves ``arg_dtypes`` out (the hot path pays for no tuple of
        them): two calls whose scalar arguments differ in type must differ in
        ``defines``, e.g. a fill of bool and one of uint8 (both ``uchar``).
        """
        key = (filename, name, defines)
        kernels = self._local.kernels
        found = kernels.get(key)
        if found is None:
            found = cl().Kernel(self.program(filename, defines), name)
            found.set_scalar_arg_dtypes(arg_dtypes)
            kernels[key] = found
        return found

    def program(self, filename: str, defines: tuple):
        """``filename`` built with ``defines`` for this device: compiled once, shared."""
        key = (filename, defines)
        program = self._programs.get(key)
        if program is not None:
            return program
        with self._lock:
            program = self._programs.get(key)
            if program is None:
                options = [f"-D{k}={v}" for k, v in defines]
                uses_fp64 = any(v == "double" for _, v in defines)
                if uses_fp64:
                    options.append("-DUSE_FP64=1")
                # NOTE: OpenCL allows 2.5 ulp for float division and 3 ulp for sqrt;
                # ask for IEEE results so that the backends agree bit for bit there.
                if self.correct_div:
                    options.append("-cl-fp32-correctly-rounded-divide-sqrt")
                program = cl().Program(self.context, source(filename)).build(options=options)
                self._programs[key] = program
        return program

    def empty(self, shape: tuple, dtype: str) -> CLArray:
        self.check_dtype(dtype)
        size = math.prod(shape)
        if size >= 2**31:
            raise ValueError(f"opencl: arrays are limited to 2**31 - 1 elements, got {shape}")
        nbytes = max(size, 1) * NP_TYPES[dtype].itemsize
        return CLArray(self.pool.allocate(nbytes), shape, contiguous_strides(shape), 0, dtype, self)


_devices: list | None = None
_states: dict[int, DeviceState] = {}
_state_lock = threading.Lock()


def devices() -> list:
    global _devices
    if _devices is None:
        _devices = discovery.list_devices()
    return _devices


def state(index: int) -> DeviceState:
    found = _states.get(index)
    if found is None:
        with _state_lock:
            found = _states.get(index)
            if found is None:
                found = _states[index] = DeviceState(devices()[index], index)
    return found


# ---------------------------------------------------------------- the array type


def contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


class CLArray:
    """An n-d view of an OpenCL buffer: shape, strides and offset counted in elements.

    Views (transpose, broadcast_to, reshape of a contiguous array) share the
    buffer; kernels read any view through its strides. Weakly referable, as NumPy's and
    CuPy's arrays are: shadow mode's table of which call made each array holds them
    weakly, so it keeps no device memory alive.
    """

    __slots__ = ("data", "shape", "strides", "offset", "dtype", "dev", "size", "__weakref__")

    def __init__(self, data, shape, strides, offset, dtype, dev):
        self.data = data
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype
        self.dev = dev
        self.size = math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_contiguous(self) -> bool:
        step = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != step:
                return False
            step *= n
        return True

    def view(self, shape, strides, offset=None) -> CLArray:
        offset = self.offset if offset is None else offset
        return CLArray(self.data, shape, strides, offset, self.dtype, self.dev)

    def __repr__(self) -> str:
        return (f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
                f"offset={self.offset}, device={self.dev.name!r})")


_new = object.__new__


def fresh(data, shape: tuple, strides: tuple, dtype: str, dev, size: int) -> CLArray:
    """A contiguous CLArray at offset 0 from what a fast path's plan keeps: ``shape`` and
    ``strides`` tuples and ``size`` their product (``CLArray(...)`` without its type call,
    tuple conversions and product: 0.1 us less a launch)."""
    out = _new(CLArray)
    out.data = data
    out.shape = shape
    out.strides = strides
    out.offset = 0
    out.dtype = dtype
    out.dev = dev
    out.size = size
    return out


def rounded(n: int, step: int = 64) -> int:
    """``n`` rounded up to a multiple of ``step`` (at least one step): a global work size."""
    return max(step, -(-n // step) * step)
