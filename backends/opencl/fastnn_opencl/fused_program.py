"""``fused_elementwise``: a chain of elementwise hooks from a recorded program (``fnn.compile``)
as one generated kernel.

Each node of the expression becomes one statement with the formula of its own kernel in
``kernels/elementwise.cl`` (the same builtins, the same NaN rules, each value of the
node's type), and floating-point contraction is off, so the fused kernel gives what the
chain of launches gives, bit for bit, with one launch and no intermediate buffers. A
kernel is built once per expression, dtypes and device. Inputs that are not contiguous
arrays of the result's shape go through the core's composite (one hook per node).
"""

from __future__ import annotations

import threading

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import runtime
from fastnn_opencl.runtime import CL_TYPES, CLArray, rounded

# each node's formula, as elementwise.cl writes it for floating dtypes (T: its type)
_FORMULAS = {
    "neg": "-{0}", "exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})",
    "abs": "fabs({0})", "tanh": "SAFE_TANH({0}, T)", "sigmoid": "SIGMOID({0}, T)",
    "relu": "{0} < 0 ? (T)0 : {0}",
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "maximum": "(isnan({0}) || isnan({1})) ? {0} + {1} : fmax({0}, {1})",
    "minimum": "(isnan({0}) || isnan({1})) ? {0} + {1} : fmin({0}, {1})",
    "greater": "(uchar)({0} > {1})", "less": "(uchar)({0} < {1})",
    "equal": "(uchar)({0} == {1})", "where": "{0} ? {1} : {2}",
}
_COMPARE = ("greater", "less", "equal")
_kernels: dict = {}
_lock = threading.Lock()


def _source(expr, in_types: list, out_type: str) -> tuple[str, str]:
    """(the kernel's source, the C type of the expression's floating values)."""
    lines: list[str] = []
    value_type = out_type if out_type != "uchar" else next(
        t for t in in_types if t != "uchar")

    def emit(node) -> str:
        kind = node[0]
        if kind == "in":
            return f"x{node[1]}[off{node[1]} + i]"
        if kind == "const":
            return f"(T)({_literal(float(node[1]))})"
        operands = [emit(child) for child in node[1:]]
        name = f"t{len(lines)}"
        ctype = "uchar" if kind in _COMPARE else "T"
        lines.append(f"    const {ctype} {name} = {_FORMULAS[kind].format(*operands)};")
        return name

    result = emit(expr)
    args = "".join(f", __global const {t} *x{k}, const int off{k}"
                   for k, t in enumerate(in_types))
    body = "\n".join(lines)
    source = (f"#pragma OPENCL FP_CONTRACT OFF\n#define T {value_type}\n"
              f"__kernel void k_fused(__global {out_type} *out, const int n{args}) {{\n"
              f"    const int i = get_global_id(0);\n    if (i >= n) return;\n"
              f"{body}\n    out[i] = {result};\n}}\n")
    return source, value_type


def _literal(value: float) -> str:
    """``value`` as OpenCL C reads it (Python writes inf and nan, which C does not know)."""
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "-INFINITY"
    return repr(value)


def _kernel(dev, source: str, value_type: str, count: int):
    key = (dev.index, source, threading.get_ident())
    found = _kernels.get(key)
    if found is None:
        with _lock:
            options = ["-DUSE_FP64=1"] if value_type == "double" else []
            if dev.correct_div:
                options.append("-cl-fp32-correctly-rounded-divide-sqrt")
            common = (runtime._KERNEL_DIR / "common.cl").read_text()
            program = runtime.cl().Program(dev.context, common + "\n" + source).build(
                options=options)
            found = runtime.cl().Kernel(program, "k_fused")
            found.set_scalar_arg_dtypes([None, np.int32] + [None, np.int32] * count)
            _kernels[key] = found
    return found


def _out_dtype(expr, inputs) -> str:
    if expr[0] in _COMPARE:
        return "bool"
    if expr[0] == "in":
        return inputs[expr[1]].dtype
    floats = [x.dtype for x in inputs if x.dtype != "bool"]
    return floats[0]


@hookimpl
def fused_elementwise(expr, inputs):
    arrays = [x for x in inputs if isinstance(x, CLArray)]
    shape = arrays[0].shape if arrays else None
    if not arrays or len(arrays) != len(inputs) or any(
            x.shape != shape or not x.is_contiguous for x in arrays) or all(
            x.dtype == "bool" for x in arrays):
        from fastnn.api import composite  # views, broadcasts: one hook per node
        from fastnn.api.registry import get_backend

        return composite.fused_elementwise(get_backend("opencl").ops, expr, inputs)
    dev = arrays[0].dev
    out_dtype = _out_dtype(expr, arrays)
    out = dev.empty(shape, out_dtype)
    n = out.size
    if n == 0:
        return out
    in_types = [CL_TYPES[x.dtype] for x in arrays]
    source, value_type = _source(expr, in_types, CL_TYPES[out_dtype])
    kernel = _kernel(dev, source, value_type, len(arrays))
    args = [out.data, n]
    for x in arrays:
        args += [x.data, x.offset]
    kernel(dev.queue, (rounded(n),), None, *args)
    return out
