"""``fused_elementwise``: a chain of elementwise hooks from a recorded program (``fnn.compile``)
as one generated CUDA kernel.

Each node of the expression becomes one statement with the formula this backend's own hook
uses for it (cupy's ufuncs for the arithmetic, ``sigmoid_of`` and the NaN-keeping relu of
``cu/activations.cu``; ``maximum``/``minimum`` propagate NaN as cupy's do), every value of
the node's type, compiled with ``--fmad=false`` so that no multiply-add is contracted across
nodes: the fused kernel gives what the chain of launches gives, with one launch and no
intermediate buffers. A kernel is compiled once per expression, dtypes and device (cupy's
RawKernel, NVRTC); CI compiles the same text with NVRTC and runs it on the host
(tests/backends/cuda/test_cuda_fused_program.py). Inputs that are not C-contiguous arrays
of the result's shape, and dtypes without kernels (float16), go through the core's composite
(one hook per node).
"""

from __future__ import annotations

import math
import threading

from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels
from fastnn_cuda._cupy import cupy as cp

C_TYPES = {"float32": "float", "float64": "double", "bool": "bool"}
THREADS = 256
MAX_BLOCKS = 8192  # the kernel loops over the rest (grid-stride)
OPTIONS = ("-std=c++14", "--fmad=false")
KERNEL = "fastnn_fused"

# each node's formula ({0}, {1}, {2}: operands; T: the expression's floating type)
FORMULAS = {
    "neg": "-{0}", "exp": "f_exp<T>({0})", "log": "f_log<T>({0})", "sqrt": "f_sqrt<T>({0})",
    "abs": "f_abs<T>({0})", "tanh": "f_tanh<T>({0})", "sigmoid": "fused_sigmoid<T>({0})",
    # (NaN and -0.0 kept, as PyTorch; the sign read from the bits, so that a subnormal is
    # not read as 0 under cupy's -ftz=true: common.cuh)
    "relu": "is_negative_bits({0}) ? T(0) : ({0})",
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "maximum": "(({0}) != ({0}) || ({1}) != ({1})) ? ({0}) + ({1}) : (({0}) > ({1}) ? ({0}) "
               ": ({1}))",
    "minimum": "(({0}) != ({0}) || ({1}) != ({1})) ? ({0}) + ({1}) : (({0}) < ({1}) ? ({0}) "
               ": ({1}))",
    "greater": "({0}) > ({1})", "less": "({0}) < ({1})", "equal": "({0}) == ({1})",
    "where": "({0}) ? ({1}) : ({2})",
}
COMPARE = ("greater", "less", "equal")

_HELPERS = r"""
template <typename T> __device__ __forceinline__ T fused_sigmoid(T z) {
    if (z >= T(0)) return T(1) / (T(1) + f_exp<T>(-z));
    const T e = f_exp<T>(z);
    return e / (T(1) + e);
}
"""


class Unfusable(Exception):
    """The expression has a part the generator does not write (a non-finite constant)."""


def source(expr, in_types: list, out_type: str) -> str:
    """The CUDA source (common.cuh included) of one expression: ``in_types`` are the C types
    of the inputs, ``out_type`` the result's ("bool" for a comparison at the root)."""
    value_type = out_type if out_type != "bool" else next(t for t in in_types if t != "bool")
    lines: list[str] = []

    def emit(node) -> str:
        kind = node[0]
        if kind == "in":
            return f"x{node[1]}[i]"
        if kind == "const":
            value = float(node[1])
            if not math.isfinite(value):
                raise Unfusable(f"constant {node[1]!r}")
            return f"T({value!r})"
        operands = [emit(child) for child in node[1:]]
        name = f"t{len(lines)}"
        ctype = "bool" if kind in COMPARE else "T"
        lines.append(f"        const {ctype} {name} = {FORMULAS[kind].format(*operands)};")
        return name

    result = emit(expr)
    params = "".join(f", const {t} *__restrict__ x{k}" for k, t in enumerate(in_types))
    body = "\n".join(lines)
    return (f'{kernels.source_header()}\n#line 1 "fused_elementwise"\ntypedef {value_type} T;\n'
            f"{_HELPERS}\n"
            f'extern "C" __global__ void {KERNEL}({out_type} *__restrict__ out, const i64 n'
            f"{params}) {{\n"
            f"    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
            f"         i += (i64)gridDim.x * blockDim.x) {{\n"
            f"{body}\n        out[i] = {result};\n    }}\n}}\n")


def grid(n: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) of a launch over ``n`` >= 1 elements."""
    return (min(-(-n // THREADS), MAX_BLOCKS),), (THREADS,)


_kernels: dict = {}
_lock = threading.Lock()


def function(text: str, device_id: int):
    """The compiled kernel of ``text`` on ``device_id`` (once per text and device)."""
    key = (text, device_id)
    fn = _kernels.get(key)
    if fn is None:
        with _lock:
            fn = _kernels.get(key)
            if fn is None:
                with cp.cuda.Device(device_id):
                    fn = cp.RawKernel(text, KERNEL, options=OPTIONS)
                _kernels[key] = fn
    return fn


def out_dtype(expr, inputs) -> str:
    if expr[0] in COMPARE:
        return "bool"
    floats = [str(x.dtype) for x in inputs if str(x.dtype) != "bool"]
    return floats[0]


_sources: dict = {}  # (expr, in dtypes) -> source text, or None where it is not fusable


def _source_of(expr, dtypes: tuple, out: str):
    key = (expr, dtypes)
    text = _sources.get(key, False)
    if text is False:
        try:
            text = source(expr, [C_TYPES[d] for d in dtypes], C_TYPES[out])
        except Unfusable:
            text = None
        _sources[key] = text
    return text


def _composite(expr, inputs):
    from fastnn.api import composite  # views, broadcasts, float16: one hook per node
    from fastnn.api.registry import get_backend

    return composite.fused_elementwise(get_backend("cuda").ops, expr, inputs)


@hookimpl
def fused_elementwise(expr, inputs):
    ndarray = cp.ndarray
    if not inputs or any(type(x) is not ndarray and not isinstance(x, ndarray)
                         for x in inputs):
        return _composite(expr, inputs)
    shape = inputs[0].shape
    dtypes = tuple(str(x.dtype) for x in inputs)
    floats = {d for d in dtypes if d != "bool"}
    if len(floats) != 1 or not kernels.has_kernel(next(iter(floats))) or any(
            x.shape != shape or not x.flags.c_contiguous for x in inputs):
        return _composite(expr, inputs)
    out_type = out_dtype(expr, inputs)
    text = _source_of(expr, dtypes, out_type)
    if text is None:
        return _composite(expr, inputs)
    out = cp.empty(shape, dtype=out_type)
    n = out.size
    if n:
        g, b = grid(n)
        function(text, inputs[0].device.id)(g, b, (out, n, *inputs))
    return out


fused_elementwise.fuses = True  # fastnn.api.fusion.planned: fold chains for this backend
