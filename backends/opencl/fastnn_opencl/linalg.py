"""Matrix products: batched GEMM kernels per device type (``kernels/matmul.cl``). The
solve, determinant and decomposition hooks (``linalg_solve``, ``linalg_slogdet``,
``linalg_qr``, ``linalg_eigh``, ``linalg_svd``) are left to the core's composites on
purpose (see the backend's README.md).

CPU devices (PoCL) pack B into unit-stride panels and run a register-blocked kernel over
them and A in place (:func:`gemm_packed`, blocks tuned per device by :mod:`gemm_tune`,
16-lane vectors where :mod:`gemm_wide` allows) for products of at least PACK_MIN
multiply-adds; smaller ones take a register-blocked kernel
that reads the operands in place (each work-item a TM x VW*VN block, no local memory).
GPUs get a kernel that stages TS x TS tiles in local memory, each work-item accumulating
WPT rows. ``FASTNN_OPENCL_GEMM=cpu|tiled`` forces one design (to test both anywhere).
"""

from __future__ import annotations

import os
import types

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.own_hooks import product_hooks
from fastnn_opencl import elementwise, gemm_tune, gemm_wide, misc
from fastnn_opencl.elementwise_plan import collapse
from fastnn_opencl.fast_gemm import matmul_2d
from fastnn_opencl.runtime import CL_TYPES, CLArray, contiguous_strides, rounded, unsigned_type

FILE = "matmul.cl"
_I = np.int32


def vector_lanes(dev, dtype: str) -> int:
    """Lanes of the CPU kernels' vectors: the native width capped at 32 bytes (8 floats, 4
    doubles). PoCL's pip build reports 16 floats on AVX-512 machines but generates AVX2
    code for them (LLVM splits a float16 into two 8-lane registers, so a block sized for
    32 wide registers spills), and builds no kernels at all for some 64-byte vectors."""
    return max(4, min(dev.vector_width(dtype), 32 // np.dtype(dtype).itemsize))


def packed_lanes(dev, dtype: str) -> int:
    """Lanes of the packed kernel's vectors: 16 floats (64 bytes, AVX-512 registers) where the
    device reports them and :mod:`gemm_wide` found the wide kernel sound there, else
    :func:`vector_lanes`."""
    if (dtype == "float32" and dev.vector_width(dtype) >= gemm_wide.LANES
            and gemm_wide.enabled(dev)):
        return gemm_wide.LANES
    return vector_lanes(dev, dtype)


def _cpu_blocks(dev, dtype: str, n: int) -> tuple:
    """(TM, VW, VN) of the unpacked CPU kernel: TM rows by VN vectors of VW lanes per
    work-item, VW the packed kernel's lanes (16 floats where :mod:`gemm_wide` allows),
    (TM, VN) tuned per device and lane count by :func:`gemm_tune.direct_blocks`. Narrow
    outputs take fewer or 4-lane vectors so that they do not all fall into the edge path.
    """
    vw = packed_lanes(dev, dtype)
    tm, vn = gemm_tune.direct_blocks(dev, dtype)
    if n < vw:
        vw = 4
    vn = max(1, min(vn, n // vw))
    return tm, vw, vn


def _design(dev, dtype: str, n: int) -> tuple:
    """(kernel name, defines, kind) for this device and an output n columns wide."""
    forced = os.environ.get("FASTNN_OPENCL_GEMM", "")
    if forced == "cpu" or (dev.is_cpu and forced != "tiled"):
        tm, vw, vn = _cpu_blocks(dev, dtype, n)
        return "k_gemm_cpu", (("TM", tm), ("VW", vw), ("VN", vn)), "cpu"
    local_mem = dev.device.local_mem_size
    if dev.max_group >= 256 and local_mem >= 2 * 32 * 33 * 8:
        return "k_gemm_tiled", (("TS", 32), ("WPT", 4)), "tiled"
    return "k_gemm_tiled", (("TS", 16), ("WPT", 4)), "tiled"


def uses_cpu_kernels(dev) -> bool:
    """True where the register-blocked CPU kernels (and so the NT kernel) run."""
    forced = os.environ.get("FASTNN_OPENCL_GEMM", "")
    return forced == "cpu" or (dev.is_cpu and forced != "tiled")


_ARG_DTYPES = [_I, _I, _I, None, _I, _I, _I, _I, None, _I, _I, _I, None, _I, _I, _I]


PACK_MIN = 1 << 20
"""Products of at least this many multiply-adds (m * n * k), with n at least PACK_N_EDGE and
k at least PACK_K_EDGE, take the packed kernel on CPU devices: a packing pass over B and
two launches, then unit-stride panels. Below it, or with a narrow output, the extra launch
costs more than the panels save. A short k still packs: an LSTM's input projection
(2048 x 16 @ 16 x 256) took 160-180 us of device time there against 300-430 us in the
direct kernel (which, with B = W.T, also needs a copy of W first)."""
PACK_EDGE = 32
PACK_N_EDGE = 16
"""The narrowest output that packs (PACK_EDGE stays the convolutions' edge on ck): an LSTM's
input gradient (2048 x 256 @ 256 x 16) and its weight gradient (256 x 2048 @ 2048 x 16, A
transposed) ran 1.5-2x faster packed, in one 16-wide panel of 12 rows per block, than
in the direct kernel (PoCL 3.1, AVX-512, CPU time)."""
PACK_K_EDGE = 16


def packs(dev, m: int, n: int, k: int) -> bool:
    """Whether C = A @ B of these sizes runs through the packed CPU kernel (any strides)."""
    return (m > 1 and n >= PACK_N_EDGE and k >= PACK_K_EDGE and m * n * k >= PACK_MIN
            and uses_cpu_kernels(dev))


def gemm(a: CLArray, b: CLArray, c: CLArray, m: int, n: int, k: int, batch: int,
         a_strides: tuple, b_strides: tuple, c_strides: tuple) -> None:
    """C = A @ B for ``batch`` matrices, described by (batch, row, col) element strides.

    b_strides[2] and c_strides[2] must be 1 (or the matrix has one column), except where
    :func:`packs` holds: then A and B take any strides (a third entry of b_strides, the
    column stride, defaults to 1).
    """
    dev = c.dev
    if packs(dev, m, n, k):
        gemm_packed(a, b, c, m, n, k, batch, a_strides, b_strides, c_strides)
        return
    name, tiles, kind = _design(dev, c.dtype, n)
    defines = (("T", CL_TYPES[c.dtype]),) + tiles
    kernel = dev.kernel(FILE, name, defines, _ARG_DTYPES)
    args = (m, n, k, a.data, a.offset, a_strides[0], a_strides[1], a_strides[2],
            b.data, b.offset, b_strides[0], b_strides[1],
            c.data, c.offset, c_strides[0], c_strides[1])
    if kind == "cpu":
        tm, vw, vn = (value for _, value in tiles)
        kernel(dev.queue, (-(-m // tm), -(-n // (vw * vn)), batch), None, *args)
    else:
        ts, wpt = tiles[0][1], tiles[1][1]
        size = (-(-n // ts) * ts, -(-m // ts) * (ts // wpt), batch)
        kernel(dev.queue, size, (ts, ts // wpt, 1), *args)


NARROW_TM = 16  # rows of a narrow output's block (TM * VN accumulators stay within 32)
KC, ROW_PANELS = 256, 8  # k chunk (its B panel stays in L1), row panels per work-item
SPLIT_TILES = 16  # fewer work-items than this (and k > KC): split k across work-items
RESIDENT_B = 1 << 19
"""Where a product has fewer than SPLIT_TILES work-items of ROW_PANELS row panels and its
packed B stays in L2 (at most RESIDENT_B bytes), the work-items take fewer row panels
(halved down to one) until there are SPLIT_TILES of them, and k is split only if there
are still too few. The models' long-k weight gradients (192x1024 @ 1024x64, A transposed:
12 work-items) split k in four and summed the partial products in a third launch
(k_gemm_sum, 17-29 us of ~250-300); their B panels are now re-read per row panel from L2."""
PACK_ROWS = 8  # k rows per work-item of the packing kernel (kernels/matmul.cl)
_PACK_ARGS = [_I, _I, None, _I, _I, _I, _I, None]
_PACKED_ARGS = [_I, _I, _I, None, _I, _I, _I, _I, _I, _I, None, None, None, _I, _I, _I, _I]
_SUM_ARGS = [_I, _I, _I, _I, _I, None, None, _I, _I, _I]


def packed_plan(dev, dtype: str, m: int, n: int, k: int, batch: int) -> tuple:
    """(defines, TM, NR, row panels, column panels, row groups, k splits) of the packed
    kernel for this product (shared with :mod:`fast_gemm`'s kept plans)."""
    tm, vn = gemm_tune.blocks(dev, dtype)
    vw = packed_lanes(dev, dtype)
    if n <= vw * (vn - 1):  # a narrow output: fewer vectors, more rows, same accumulators
        narrow = -(-n // vw)
        tm, vn = min(tm * vn // narrow, NARROW_TM), narrow
    nr = vw * vn
    mb, nb = -(-m // tm), -(-n // nr)
    rp = ROW_PANELS
    if nb * nr * k * np.dtype(dtype).itemsize <= RESIDENT_B:
        while rp > 1 and nb * -(-mb // rp) * batch < SPLIT_TILES:
            rp //= 2
    defines = (("T", CL_TYPES[dtype]), ("TM", tm), ("VW", vw), ("VN", vn), ("KC", KC),
               ("R", rp))
    groups = -(-mb // rp)
    splits = -(-k // KC) if nb * groups * batch < SPLIT_TILES and k > KC else 1
    return defines, tm, nr, mb, nb, groups, splits


def packed_local(dev, size: tuple) -> tuple:
    """The work-group of a ``k_gemm_packed`` launch over ``size`` (column panels, row groups,
    batch * splits): a divisor of the panels, as large as leaves 4 work-groups a compute
    unit. PoCL's own choice (local size None) ran some grids as one work-group on one
    thread: 1024x64 @ 64x192 (12 x 22 items) at 95-97 GFLOP/s on two threads, 156-164
    with this; 256x2048 @ 2048x64 102-105 against 158-159; large grids alike (1024^3 ~200)."""
    panels, rest = size[0], size[1] * size[2]
    want = 4 * dev.compute_units
    for width in range(panels, 0, -1):
        if panels % width == 0 and panels // width * rest >= want:
            return (width, 1, 1)
    return (1, 1, 1)


def gemm_packed(a: CLArray, b, c: CLArray, m: int, n: int, k: int, batch: int,
                a_strides: tuple, b_strides: tuple, c_strides: tuple, a_k2: tuple = ()) -> None:
    """C = A @ B through packed panels of B (``k_pack_b``, then ``k_gemm_packed``, which
    reads A in place).

    A and B take any (batch, row, col) strides; C needs unit column stride. The blocks
    (TM rows by VN vectors) come from :mod:`gemm_tune`. A product with few output tiles
    and a long k (a convolution's weight gradient: 32 x 160 outputs over 8192 positions)
    splits k in KC chunks across work-items and sums the partial products after.

    ``a_k2 = (K2, stride)`` runs k over two axes of A (k = q * K2 + k2 at q * stride + k2 *
    a_strides[2]); ``b`` may instead be a function ``(defines, panels, buffer)`` that
    packs B itself (a convolution's im2col, never built)."""
    dev = c.dev
    dtype = c.dtype
    defines, tm, nr, mb, nb, groups, splits = packed_plan(dev, dtype, m, n, k, batch)
    bp = dev.empty((batch * nb * nr * k,), dtype)
    scratch = k > KC
    cp = dev.empty((batch * splits * mb * tm * nb * nr,), dtype) if scratch else c
    if callable(b):
        b(defines, nb, bp)
    else:
        sbn = b_strides[2] if len(b_strides) > 2 else 1
        pack_b = dev.kernel(FILE, "k_pack_b", defines, _PACK_ARGS)
        pack_b(dev.queue, (-(-k // PACK_ROWS), nb, batch), None, k, n, b.data, b.offset,
               b_strides[0], b_strides[1], sbn, bp.data)
    k2, sak2 = a_k2 or (k, 0)
    kernel = dev.kernel(FILE, "k_gemm_packed", defines, _PACKED_ARGS)
    size = (nb, groups, batch * splits)
    kernel(dev.queue, size, packed_local(dev, size), m, n, k, a.data, a.offset,
           *a_strides, k2, sak2, bp.data, cp.data, c.data, c.offset, c_strides[0],
           c_strides[1], splits)
    if splits > 1:
        total = dev.kernel(FILE, "k_gemm_sum", defines, _SUM_ARGS)
        total(dev.queue, (n, m, batch), None, m, n, splits, mb * tm, nb * nr, cp.data,
              c.data, c.offset, c_strides[0], c_strides[1])


def gemm_nt(a: CLArray, b: CLArray, c: CLArray, m: int, n: int, k: int, batch: int,
            a_strides: tuple, b_strides: tuple, c_strides: tuple) -> None:
    """C = A @ B^T, B given as (N, K) matrices: both operands read along k with unit stride.

    a_strides = (batch, row, 1); b_strides = (batch, row of the (N, K) matrix, 1).
    CPU devices only (see :func:`uses_cpu_kernels`): 2 x 4 dot products per
    work-item (16 vector registers).
    """
    dev = c.dev
    vw = vector_lanes(dev, c.dtype)
    tm = 2
    defines = (("T", CL_TYPES[c.dtype]), ("TM", tm), ("TN", 4), ("VW", vw), ("VN", 1))
    kernel = dev.kernel(FILE, "k_gemm_nt_cpu", defines, _ARG_DTYPES)
    kernel(dev.queue, (-(-n // 4), -(-m // tm), batch), None, m, n, k,
           a.data, a.offset, a_strides[0], a_strides[1], 1,
           b.data, b.offset, b_strides[0], b_strides[1],
           c.data, c.offset, c_strides[0], c_strides[1])


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


def gemm_exact(a: CLArray, b: CLArray, c: CLArray, m: int, n: int, k: int, batch: int,
               a_strides: tuple, b_strides: tuple, c_strides: tuple) -> None:
    """C = A @ B for integer and bool matrices (``kernels/matmul_int.cl``): any strides."""
    dev = c.dev
    defines = (("T", CL_TYPES[c.dtype]), ("UT", unsigned_type(c.dtype)),
               ("IS_BOOL", int(c.dtype == "bool")))
    kernel = dev.kernel("matmul_int.cl", "k_gemm_exact", defines,
                        [_I, _I, _I, None, _I, _I, _I, _I, None, _I, _I, _I, _I, None, _I, _I,
                         _I])
    kernel(dev.queue, (rounded(n, 16), rounded(m, 4), batch), None, m, n, k,
           a.data, a.offset, *a_strides, b.data, b.offset, *b_strides,
           c.data, c.offset, c_strides[0], c_strides[1])


@hookimpl
def matmul(a, b):
    out = matmul_2d(a, b)  # contiguous 2-D floats: a kept plan per shape (fast_gemm)
    if out is not None:
        return out
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
    elif out.size and not a.dtype.startswith("float"):
        a2, a_strides = _as_batch_matrix(a, batch_shape, need_unit_cols=False)
        b2, b_strides = _as_batch_matrix(b, batch_shape, need_unit_cols=False)
        gemm_exact(a2, b2, out, m, n, k, batch, a_strides, b_strides, (m * n, n, 1))
    elif out.size:
        a2, a_strides = _as_batch_matrix(a, batch_shape, need_unit_cols=False)
        if packs(a.dev, m, n, k):  # the packing pass reads B through any strides
            b2, b_strides = _as_batch_matrix(b, batch_shape, need_unit_cols=False)
            gemm_packed(a2, b2, out, m, n, k, batch, a_strides, b_strides, (m * n, n, 1))
            return _squeezed(out, squeeze, batch_shape, m, n)
        if _reads_transposed(a, b, k):
            b2, b_strides = _as_batch_matrix(b, batch_shape, need_unit_cols=False)
            if b_strides[1] == 1 and n > 1:  # still (K, N) with k contiguous: the NT kernel
                b_nt = (b_strides[0], b_strides[2], 1)
                gemm_nt(a2, b2, out, m, n, k, batch, a_strides, b_nt, (m * n, n, 1))
                return _squeezed(out, squeeze, batch_shape, m, n)
        b2, b_strides = _as_batch_matrix(b, batch_shape, need_unit_cols=True)
        gemm(a2, b2, out, m, n, k, batch, a_strides, b_strides, (m * n, n, 1))
    return _squeezed(out, squeeze, batch_shape, m, n)


# linear and linear_grad_weight: the core's composites on the backend's own views and
# matmul, a Linear's leading axes folded into one GEMM (matmul reads the transposed W in
# place)
globals().update(product_hooks(types.SimpleNamespace(reshape=misc.reshape,
                                                     transpose=misc.transpose, matmul=matmul)))


NT_MIN_K = 256


def _reads_transposed(a: CLArray, b: CLArray, k: int) -> bool:
    """True when B is a transposed view (k contiguous) and A has k contiguous too: x @ W^T.

    Only for k >= NT_MIN_K: with shorter rows the NT kernel's per-output horizontal sums
    dominate, and copying W^T once for the NN kernel measured 1.2-1.8x faster (k 64-128;
    the NT kernel won by 1.5x at k 512-784)."""
    if not uses_cpu_kernels(a.dev) or b.shape[-1] == 1 or b.strides[-1] == 1 or k < NT_MIN_K:
        return False
    return b.strides[-2] == 1 and (a.strides[-1] == 1)


def _squeezed(out: CLArray, squeeze: list, batch_shape: tuple, m: int, n: int) -> CLArray:
    if squeeze:
        shape = batch_shape + (m,) * (-2 not in squeeze) + (n,) * (-1 not in squeeze)
        out = out.view(shape, contiguous_strides(shape))
    return out


def _zeros_like(out: CLArray) -> CLArray:
    from fastnn_opencl.misc import fill

    return fill(out.shape, 0, out.dtype, out.dev)
