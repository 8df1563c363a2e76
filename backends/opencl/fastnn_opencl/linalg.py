"""Matrix products: one batched GEMM kernel per device type (``kernels/matmul.cl``).

CPU devices (PoCL) get a register-blocked kernel: each work-item computes a
TM x VW block with VW-wide vectors and no local memory. GPUs get a kernel that
stages TS x TS tiles in local memory, each work-item accumulating WPT rows.
``FASTNN_OPENCL_GEMM=cpu|tiled`` forces one design (to test both anywhere).
"""

from __future__ import annotations

import os

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise
from fastnn_opencl.elementwise import collapse
from fastnn_opencl.runtime import CL_TYPES, CLArray, contiguous_strides

FILE = "matmul.cl"
_I = np.int32


def _design(dev, n: int) -> tuple:
    """(kernel name, defines, kind) for this device and an output n columns wide.

    CPU blocks: 8 x 16 measured best on PoCL here (25-31 GFLOP/s against 9-20 for
    8 x 8, 4 x 16, 6 x 16, 12 x 16 on 512-wide products); narrow outputs take
    4-wide vectors so that they do not all fall into the scalar edge path.
    """
    forced = os.environ.get("FASTNN_OPENCL_GEMM", "")
    if forced == "cpu" or (dev.is_cpu and forced != "tiled"):
        return "k_gemm_cpu", (("TM", 8), ("VW", 16 if n >= 32 else 4)), "cpu"
    local_mem = dev.device.local_mem_size
    if dev.max_group >= 256 and local_mem >= 2 * 32 * 33 * 8:
        return "k_gemm_tiled", (("TS", 32), ("WPT", 4)), "tiled"
    return "k_gemm_tiled", (("TS", 16), ("WPT", 4)), "tiled"


def gemm(a: CLArray, b: CLArray, c: CLArray, m: int, n: int, k: int, batch: int,
         a_strides: tuple, b_strides: tuple, c_strides: tuple) -> None:
    """C = A @ B for ``batch`` matrices, described by (batch, row, col) element strides.

    b_strides[2] and c_strides[2] must be 1 (or the matrix has one column).
    """
    dev = c.dev
    name, tiles, kind = _design(dev, n)
    defines = (("T", CL_TYPES[c.dtype]),) + tiles
    arg_dtypes = [_I, _I, _I, None, _I, _I, _I, _I, None, _I, _I, _I, None, _I, _I, _I]
    kernel = dev.kernel(FILE, name, defines, arg_dtypes)
    args = (m, n, k, a.data, a.offset, a_strides[0], a_strides[1], a_strides[2],
            b.data, b.offset, b_strides[0], b_strides[1],
            c.data, c.offset, c_strides[0], c_strides[1])
    if kind == "cpu":
        tm, vw = tiles[0][1], tiles[1][1]
        kernel(dev.queue, (-(-n // vw), -(-m // tm), batch), None, *args)
    else:
        ts, wpt = tiles[0][1], tiles[1][1]
        size = (-(-n // ts) * ts, -(-m // ts) * (ts // wpt), batch)
        kernel(dev.queue, size, (ts, ts // wpt, 1), *args)


def _batch_strides(x: CLArray, batch_shape: tuple) -> list:
    """x's strides along ``batch_shape`` (0 where x is broadcast)."""
    lead = len(batch_shape) - (x.ndim - 2)
    return [0] * lead + [0 if n == 1 else s for n, s in zip(x.shape[:-2], x.strides[:-2])]


def _as_batch_matrix(x: CLArray, batch_shape: tuple, need_unit_cols: bool):
    """(array, (batch stride, row stride, col stride)) with x's batch axes as one stride."""
    if need_unit_cols and x.shape[-1] > 1 and x.strides[-1] != 1:
        x = elementwise.copy(x)
    strides = _batch_strides(x, batch_shape)
    shape, (merged,) = collapse(batch_shape, [strides])
    if len(shape) > 1:  # an irregular broadcast: materialise it
        full = x.view(batch_shape + x.shape[-2:], tuple(strides) + x.strides[-2:])
        x = elementwise.copy(full)
        merged = (x.shape[-1] * x.shape[-2],)
    stride = merged[0] if merged else 0
    return x, (stride, x.strides[-2], x.strides[-1] if x.shape[-1] > 1 else 1)


@hookimpl
def matmul(a, b):
    if not a.dtype.startswith("float"):
        raise TypeError(f"opencl: matmul needs floating-point operands, got {a.dtype}")
    squeeze = []
    if a.ndim == 1:
        a = a.view((1,) + a.shape, (0,) + a.strides)
        squeeze.append(-2)
    if b.ndim == 1:
        b = b.view(b.shape + (1,), b.strides + (0,))
        squeeze.append(-1)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch_shape = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    out = a.dev.empty(batch_shape + (m, n), a.dtype)
    batch = int(np.prod(batch_shape, dtype=np.int64))
    if out.size and k == 0:
        out = _zeros_like(out)
    elif out.size:
        a2, a_strides = _as_batch_matrix(a, batch_shape, need_unit_cols=False)
        b2, b_strides = _as_batch_matrix(b, batch_shape, need_unit_cols=True)
        gemm(a2, b2, out, m, n, k, batch, a_strides, b_strides, (m * n, n, 1))
    if squeeze:
        shape = batch_shape + (m,) * (-2 not in squeeze) + (n,) * (-1 not in squeeze)
        out = out.view(shape, contiguous_strides(shape))
    return out


def _zeros_like(out: CLArray) -> CLArray:
    from fastnn_opencl.misc import fill

    return fill(out.shape, 0, out.dtype, out.dev)
