"""The fused CUDA kernels: where their sources live, how they compile, how Python finds them.

Sources are the ``cu/*.cu`` files shipped as package data. Each is compiled as
``common.cuh`` + the file, with :data:`COMPILE_OPTIONS`, by ``cupy.RawModule``
(NVRTC) the first time one of its kernels is used on a device; CI compiles the
very same text with NVRTC directly (tests/backends/cuda/test_kernel_compile.py),
so a kernel that does not compile fails CI even without a GPU.

Kernels are ``extern "C"`` and named ``<kernel>_<suffix>`` with the suffix
from :data:`KERNEL_DTYPES`; dtypes without a suffix (float16, integers) take
the cupy fallback paths in the hook modules.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from importlib import resources

from fastnn.api.hookspec import BIAS_ACT_KINDS
from fastnn_cuda import launch

KERNEL_DTYPES = {"float32": "f32", "float64": "f64"}
SOURCES = ("activations.cu", "softmax.cu", "rms.cu", "swish.cu", "optim.cu", "optim_more.cu",
           "conv.cu",
           "reduce.cu", "layers.cu", "scatter.cu", "norm.cu",
           "attention.cu", "clip.cu")
COMPILE_OPTIONS = ("-std=c++14",) + launch.table_defines()

# Must match `enum ActKind` in cu/activations.cu (a test compares the two).
ACTIVATION_CODES = {kind: code for code, kind in enumerate(BIAS_ACT_KINDS)}

# kernel base name -> source file that defines it (both dtype suffixes)
KERNEL_FILES = {
    "bias_act": "activations.cu",
    "bias_act_backward": "activations.cu",
    "act_backward": "activations.cu",
    "softmax": "softmax.cu",
    "log_softmax": "softmax.cu",
    "softmax_xent": "softmax.cu",
    "softmax_xent_backward": "softmax.cu",
    "softmax_xent_ignore": "softmax.cu",
    "softmax_xent_ignore_backward": "softmax.cu",
    "sum_rows": "reduce.cu",
    "sum_all": "reduce.cu",
    "rms_div": "rms.cu",
    "swish_forward": "swish.cu",
    "swish_backward": "swish.cu",
    "sgd_step": "optim.cu",
    "adam_step": "optim.cu",
    "rmsprop_step": "optim.cu",
    "amsgrad_step": "optim.cu",
    "rmsprop_momentum_step": "optim.cu",
    "adagrad_step": "optim.cu",
    "radam_step": "optim.cu",
    "nadam_step": "optim.cu",
    "adadelta_step": "optim_more.cu",
    "adamax_step": "optim_more.cu",
    "asgd_step": "optim_more.cu",
    "rprop_step": "optim_more.cu",
    "im2col": "conv.cu",
    "col2im": "conv.cu",
    "im2col2d": "conv.cu",
    "col2im2d": "conv.cu",
    "max_pool2d_forward": "layers.cu",
    "max_pool2d_share": "layers.cu",
    "max_pool2d_backward": "layers.cu",
    "batch_norm_forward": "layers.cu",
    "batch_norm_backward": "layers.cu",
    "lstm_cell_forward": "layers.cu",
    "lstm_cell_backward": "layers.cu",
    "gru_cell_forward": "layers.cu",
    "gru_cell_backward": "layers.cu",
    "scatter_add_lines": "scatter.cu",
    "scatter_add_segments": "scatter.cu",
    "layer_norm_forward": "norm.cu",
    "layer_norm_backward_dx": "norm.cu",
    "layer_norm_param_grads": "norm.cu",
    "attention_softmax": "attention.cu",
    "attention_softmax_backward": "attention.cu",
    "norm_parts": "clip.cu",
    "norm_finish": "clip.cu",
    "clip_scale": "clip.cu",
}

_ENTRY = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:FASTNN_COLUMN_BOUNDS\s+)?(\w+?)_##SUFFIX\s*\(')


def _read(name: str) -> str:
    return resources.files("fastnn_cuda").joinpath("cu").joinpath(name).read_text(encoding="utf-8")


_INCLUDE = re.compile(r'#include "(\w+\.cuh)"')


def _expanded(name: str) -> str:
    """The file with each ``#include "x.cuh"`` line replaced by that header's text: NVRTC
    gets one string and no include path. ``#line`` keeps the errors' file names right."""
    lines = []
    for number, line in enumerate(_read(name).splitlines(), 1):
        header = _INCLUDE.fullmatch(line.strip())
        lines.append(f'#line 1 "{header[1]}"\n{_read(header[1])}\n#line {number + 1} "{name}"'
                     if header else line)
    return "\n".join(lines) + "\n"


@cache
def source(name: str) -> str:
    """The full text NVRTC compiles for ``name``: common.cuh followed by the file, its
    ``#include``s expanded."""
    if name not in SOURCES:
        raise ValueError(f"unknown kernel source {name!r}; known: {', '.join(SOURCES)}")
    return f'{_read("common.cuh")}\n#line 1 "{name}"\n{_expanded(name)}'


@cache
def source_header() -> str:
    """common.cuh, which every source (also the generated ones) starts with."""
    return _read("common.cuh")


def declared_kernels(name: str) -> set[str]:
    """Kernel names a source declares, with every dtype suffix (read from the macros)."""
    bases = _ENTRY.findall(_read(name))
    return {f"{base}_{suffix}" for base in bases for suffix in KERNEL_DTYPES.values()}


def kernel_name(base: str, dtype: str) -> str:
    """``softmax`` + ``float32`` -> ``softmax_f32``."""
    return f"{base}_{KERNEL_DTYPES[dtype]}"


@cache
def has_kernel(dtype) -> bool:
    """Whether fused kernels exist for ``dtype`` (a NumPy/cupy dtype or its name).

    Cached: it is asked on every call of a fused hook, and ``str(dtype)`` alone
    costs a few microseconds of host time.
    """
    return str(dtype) in KERNEL_DTYPES


_functions: dict = {}
_modules: dict = {}
# NOTE: threads share the compiled modules and functions (a cupy RawKernel launch takes
# its arguments with the call, so one function object serves every thread); the lock
# makes the first use compile each module once, not once per racing thread.
_compile_lock = threading.Lock()


def function(base: str, dtype, device_id: int):
    """The compiled kernel ``base`` for ``dtype`` on ``device_id`` (compiled once, then cached)."""
    key = (base, dtype, device_id)  # a dtype or its name: both hash, no str() per call
    fn = _functions.get(key)
    if fn is None:
        with _compile_lock:
            fn = _functions.get(key)
            if fn is None:
                fn = _functions[key] = _compile(base, dtype, device_id)
    return fn


def _compile(base: str, dtype, device_id: int):
    import cupy

    file = KERNEL_FILES[base]
    with cupy.cuda.Device(device_id):
        module = _modules.get((file, device_id))
        if module is None:
            module = _modules[(file, device_id)] = cupy.RawModule(code=source(file),
                                                                  options=COMPILE_OPTIONS)
        return module.get_function(kernel_name(base, str(dtype)))


def launch_planes(base: str, dtype, device_id: int, positions: int, middle: int, rows: int,
                  args: tuple) -> None:
    """Launch a plane kernel (see :func:`launch.plane_grid`; nothing to do when empty)."""
    if positions == 0 or middle == 0 or rows == 0:
        return
    grid, block = launch.plane_grid(positions, middle, rows)
    function(base, dtype, device_id)(grid, block, args)


def launch_columns(base: str, dtype, device_id: int, cols: int, args: tuple) -> None:
    """Launch a column-tiled kernel (32 columns per block; nothing to do when cols == 0)."""
    if cols == 0:
        return
    grid, block = launch.column_grid(cols)
    function(base, dtype, device_id)(grid, block, args)


def launch_one_block(base: str, dtype, device_id: int, args: tuple) -> None:
    """Launch a single-block kernel (a small full reduction)."""
    function(base, dtype, device_id)((1,), (launch.ONE_BLOCK_THREADS,), args)


def launch_flat(base: str, dtype, device_id: int, total: int, args: tuple) -> None:
    """Launch a flat grid-stride kernel over ``total`` elements (nothing to do when 0)."""
    if total == 0:
        return
    grid, block = launch.flat_grid(total)
    function(base, dtype, device_id)(grid, block, args)


def launch_channels(base: str, dtype, device_id: int, channels: int, args: tuple) -> None:
    """Launch a one-block-per-channel kernel (batch norm)."""
    if channels == 0:
        return
    grid, block = launch.channel_grid(channels)
    function(base, dtype, device_id)(grid, block, args)


def launch_rows(base: str, dtype, device_id: int, rows: int, cols: int, args: tuple) -> None:
    """Launch a one-block-per-row kernel (nothing to do when rows == 0)."""
    if rows == 0:
        return
    grid, block = launch.row_grid(rows, cols)
    function(base, dtype, device_id)(grid, block, args)
