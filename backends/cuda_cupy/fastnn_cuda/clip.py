"""Gradient clipping's two hooks, ``total_norm`` and ``clip_grads_with_norm`` (cu/clip.cu):
a few launches for all of a model's gradients, and nothing waits for the device.

The arrays travel in the optimizer steps' tables (``launch.pack_step_tables``, passed by
value, at most ``launch.MAX_TENSORS`` arrays a launch), as PyTorch's ``_foreach_norm`` and
``_foreach_mul_`` take their tensor lists. ``total_norm`` makes one ``norm_parts`` launch a
table, each block writing one part of the norm into a float64 buffer, then one
``norm_finish`` that joins the parts and takes the root into a 0-d array; its composite
made three calls an array. ``clip_grads_with_norm`` makes one ``clip_scale`` launch a
table, the kernel reading the total from device memory, so clip_grad_norm_ never reads
the norm back. An array the kernels do not take (float16, a strided layout) takes cupy
calls of its own, as in the optimizer steps' fallback: its part of the norm cast, raised,
summed and copied among the kernels' parts; its product with the coefficient.
"""

from __future__ import annotations

import math

from fastnn.api.composite_optim import norm_dtype
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels, launch, optim
from fastnn_cuda._cupy import cupy as cp

# how the kernels take the norm (cu/clip.cu's NORM_*)
NORM_TWO, NORM_INF, NORM_POW = 0, 1, 2


def _kind(norm_type: float) -> int:
    return NORM_TWO if norm_type == 2.0 else NORM_INF if norm_type == math.inf else NORM_POW


def _launches(arrays, groups, pointers):
    """[(dtype, record, blocks)]: the table launches of ``groups`` ({dtype: [indices]}), each
    array's pointers from ``pointers(k)``. Planned before any runs, so that the norm's
    buffer of parts is sized first."""
    out = []
    for dtype, idx in groups.items():
        zeros = [0.0] * len(idx)
        for record, blocks in optim._tables([pointers(k) for k in idx],
                                            [arrays[k].size for k in idx], zeros, zeros, None):
            out.append((dtype, record, blocks))
    return out


def _fallback_part(x, kind: int, norm_type: float, dtype: str):
    """The norm's part of ``x`` (a 0-d array) by cupy: float16 values summed in float32."""
    v = x.astype(dtype, copy=False)
    if kind == NORM_INF:
        return cp.max(cp.abs(v))
    return cp.sum(v * v) if kind == NORM_TWO else cp.sum(cp.abs(v) ** float(norm_type))


@hookimpl
def total_norm(arrays, norm_type):
    dtype, kind = norm_dtype(arrays), _kind(norm_type)
    p = 0.0 if kind == NORM_INF else float(norm_type)
    groups = optim._kernel_groups(arrays)  # C-contiguous float32 and float64 ones
    done = {k for idx in groups.values() for k in idx}
    rest = [x for k, x in enumerate(arrays) if k not in done and x.size]
    plan = _launches(arrays, groups, lambda k: (arrays[k].data.ptr,))
    count = sum(blocks for _, _, blocks in plan) + len(rest)
    parts = cp.empty((count,), dtype="float64")
    device_id, slot = arrays[0].device.id, 0
    for group_dtype, record, blocks in plan:
        kernels.function("norm_parts", group_dtype, device_id)(
            (blocks,), (launch.STEP_THREADS,), (record, parts[slot:], p, kind))
        slot += blocks
    for x in rest:
        # a device copy into a one-element slice (NOTE: NumPy, the tests' stand-in, reads
        # a 0-d value to the host to store it at an integer index)
        parts[slot:slot + 1] = _fallback_part(x, kind, norm_type, dtype)
        slot += 1
    out = cp.empty((), dtype=dtype)
    kernels.launch_one_block("norm_finish", dtype, device_id, (parts, out, count, p, kind))
    return out


def _coefficient(total, max_norm):
    """c = min(max_norm / (total + 1e-6), 1) in total's dtype, by cupy on the device (NaN
    kept by minimum): the multiplier of the gradients the kernels do not take."""
    kind = total.dtype.type
    coef = cp.minimum(cp.divide(kind(max_norm), total + kind(1e-6)), kind(1.0))
    return coef.astype(total.dtype, copy=False)


@hookimpl
def clip_grads_with_norm(grads, max_norm, total):
    out = [None] * len(grads)
    if kernels.has_kernel(total.dtype):
        groups = optim._kernel_groups(grads)
        for idx in groups.values():
            for k in idx:
                out[k] = cp.empty_like(grads[k])
        plan = _launches(grads, groups, lambda k: (out[k].data.ptr, grads[k].data.ptr))
        scalars = (float(max_norm), int(total.dtype == "float64"))
        for dtype, record, blocks in plan:
            kernels.function("clip_scale", dtype, grads[0].device.id)(
                (blocks,), (launch.STEP_THREADS,), (record, total) + scalars)
    left = [k for k in range(len(grads)) if out[k] is None]
    if left:
        coef, cast = _coefficient(total, max_norm), {}
        for k in left:
            g = grads[k]
            if g.dtype not in cast:
                cast[g.dtype] = coef.astype(g.dtype, copy=False)
            out[k] = g * cast[g.dtype]
    return out
