"""How far one host array is from another, in the terms of the conformance suite.

As :func:`fastnn.conformance.compare.assert_close`: NaN and Inf are values (a NaN must
sit where the reference has one, an Inf where it has the same Inf); finite elements
pass when |got - want| <= atol + rtol * |want|. Unlike it, this returns the numbers
(shadow mode keeps them for its report) instead of raising.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fastnn.api import native


@dataclass
class Diff:
    """One output compared: errors, the worst element, and how many elements failed."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    ratio: float = 0.0  # the worst error as a fraction of its tolerance (> 1 fails)
    bad: int = 0
    size: int = 0
    worst: tuple = ()
    got: object = None
    want: object = None
    kind: str = "value"  # or "NaN/Inf placement", "shape", "dtype", "presence"
    shape: tuple = ()

    @property
    def failed(self) -> bool:
        return self.bad > 0


EQUAL = Diff()  # what an equal output compares as (shared: never changed)


# unsigned integers of each itemsize: two arrays equal bit for bit are equal as values
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# below this many elements a comparison allocates as NumPy does; above, it works in
# buffers kept between calls (a fresh large array costs a page fault per 4 KiB on first
# touch, which made the comparisons of a large model cost more than its kernels)
_SCRATCH_FROM = 1 << 14
_local = threading.local()
_SAME_FROM = 1 << 10  # from this many elements, first ask whether both are one memory
_BYTES_BELOW = 1 << 13  # arrays this small are compared as bytes
_BLOCK = 1 << 16  # elements a pass of a long comparison takes at a time
_BLOCKS_FROM = 1 << 17  # arrays this long are compared a block at a time


def scratch(slot: int, dtype, shape: tuple) -> np.ndarray | None:
    """A C-contiguous work array of ``shape`` and ``dtype`` (slot 0, 1 or 2: distinct
    memory; :mod:`fastnn.shadowing.vector` uses 3, 4 and 5), reused between calls; None
    for small shapes (allocated as usual)."""
    size = 1
    for n in shape:
        size *= n
    if size < _SCRATCH_FROM:
        return None
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    dtype = np.dtype(dtype)
    key = (slot, dtype)
    buffer = buffers.get(key)
    if buffer is None or buffer.size < size:
        buffer = buffers[key] = np.empty(size, dtype)
    return buffer[:size].reshape(shape)


def release() -> None:
    """Drop this thread's work buffers (shadowing has stopped; a large model's would
    otherwise stay allocated)."""
    _local.buffers = {}


#: the C check (close.c) takes outputs from this many elements (below it, its call's
#: fixed cost is about NumPy's passes' whole cost)
NATIVE_FROM = 1 << 12
_NATIVE = "FASTNN_NATIVE"  # the switch of the core's C helpers (fastnn.api.native)
_close: list = []  # [{dtype: the C function} or None, why, {dtype: its _many}] once loaded
# close.c's loop vectorises only so (what the flags assume away is what it reports)
CLOSE_FLAGS = native.FLAGS + ("-fno-strict-aliasing", "-ffinite-math-only", "-fno-signed-zeros")


def _close_functions(many: bool = False):
    """{np.float32: fn, np.float64: fn} of close.c (``many``: its fastnn_close_*_many,
    for outputs laid end to end), or None (NumPy's passes)."""
    if not _close:
        lib, why = native.load(Path(__file__).with_name("close.c"), _NATIVE,
                               "shadow mode's C comparison", CLOSE_FLAGS)
        found = several = None
        if lib is not None:
            ptr, i64 = ctypes.c_void_p, ctypes.c_int64
            kinds = ((np.dtype(np.float32), 32, ctypes.c_float),
                     (np.dtype(np.float64), 64, ctypes.c_double))
            found = {dtype: native.typed(lib, f"fastnn_close_f{bits}",
                                         [ptr, ptr, i64, real, real, ptr], ctypes.c_int)
                     for dtype, bits, real in kinds}
            several = {dtype: native.typed(lib, f"fastnn_close_f{bits}_many",
                                           [i64] + [ptr] * 8)
                       for dtype, bits, _ in kinds}
        _close[:] = [found, why, several]
    found = _close[0]  # (a test may set _close to [None, why])
    return _close[2] if many and found is not None else found


_bulk: list = []  # [bulk.c's fastnn_bulk or None, why, fastnn_settle, fastnn_collect] once
# loaded


def bulk_function(settle: bool = False, collect: bool = False):
    """bulk.c's batch comparison (a list of outputs in, their verdicts out), or None;
    ``settle``: its check of a batch's calls (settle.c, for :meth:`fastnn.shadowing.
    batch.Batching._settle_batch`), or None; ``collect``: its list of the arrays a batch
    needs read (collect.c, for :meth:`~fastnn.shadowing.batch.Batching._read_batch`)."""
    if not _bulk:
        lib, why = native.load(Path(__file__).with_name("bulk.c"), _NATIVE,
                               "shadow mode's C batch comparison", CLOSE_FLAGS,
                               python=True)
        fn = checks = arrays = None
        if lib is not None:
            obj = ctypes.py_object
            fn = native.typed(lib, "fastnn_bulk", [obj], obj)
            checks = native.typed(lib, "fastnn_settle", [obj] * 9, obj)
            arrays = native.typed(lib, "fastnn_collect", [obj] * 3, obj)
        _bulk[:] = [fn, why, checks, arrays]
    return _bulk[3] if collect else _bulk[2] if settle else _bulk[0]


def native_status() -> str:
    """Whether shadow mode compares large outputs in C, and why."""
    _close_functions()
    return _close[1]


def close_in_c(fn, got, want, rtol, atol):
    """(max |got - want|, the worst ratio to the tolerance) of one output in one call of
    close.c's ``fn``, read in memory order; None when the two are not laid out alike and
    whole (C- or F-contiguous, the same strides) or an element is NaN or Inf."""
    if got.strides != want.strides or not (
            (got.flags.c_contiguous and want.flags.c_contiguous)
            or (got.flags.f_contiguous and want.flags.f_contiguous)):
        return None
    out = np.empty(2)
    if fn(native.address(got), native.address(want), got.size, rtol, atol,
          native.address(out)):
        return None
    return float(out[0]), float(out[1])


def _native_close(got, want, rtol, atol):
    """:func:`compare` of a passing output in one C pass: EQUAL or a passing Diff; None
    when C is not in use, the layouts differ, an element is NaN or Inf, or an element
    fails (NumPy's passes then find what :func:`compare` reports)."""
    functions = _close_functions()
    fn = None if functions is None else functions.get(got.dtype)
    found = None if fn is None else close_in_c(fn, got, want, rtol, atol)
    if found is None:
        return None
    max_abs, worst = found
    if not worst <= 1.0:
        return None
    if max_abs == 0.0:
        return EQUAL
    return Diff(max_abs=max_abs, ratio=worst, size=got.size)


def same_memory(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether two arrays of one shape, dtype and strides start at the same address (so
    they are the same values)."""
    return np.may_share_memory(got, want) and native.address(got) == native.address(want)


def skip_below(atol: float, known: float) -> float:
    """The max |got - want| under which an output's worst ratio to its tolerance need not
    be computed: every element's ratio, ``err / (atol + rtol * |want|)``, is at most
    ``err / atol``, so under ``atol * min(known, 1)`` (less a margin for float32's
    rounding) the output passes and cannot raise the report's worst ratio ``known``: the
    ratio passes over the output (four of the comparison's seven) are skipped."""
    return atol * min(known, 1.0) * 0.999


def _bitwise_equal(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether the two arrays (same shape and dtype) hold the same bits: one pass, no
    NaN tests (the same NaN bits are the same NaN). False says nothing: -0.0 == 0.0."""
    if got.nbytes <= _BYTES_BELOW:  # small: one memcmp beats a ufunc call and a reduction
        return got.tobytes() == want.tobytes()
    if not got.flags.c_contiguous and got.flags.f_contiguous and want.flags.f_contiguous:
        got, want = got.T, want.T  # transposes: compared in memory order (the work array
        # is C-ordered, and walking a transposed pair in its order took 9 ns an element)
    bits = _BITS.get(got.dtype.itemsize)
    if bits is None or got.dtype.kind not in "fiubV":
        return bool(np.array_equal(got, want))
    same = np.equal(got.view(bits), want.view(bits), out=scratch(2, np.bool_, got.shape))
    return bool(same.all())


def compare(got, want, rtol: float, atol: float, equal_first: bool = True,
            known: float = 0.0) -> Diff:
    """``got`` (the backend's output) against ``want`` (the reference's), on the host.
    ``equal_first``: try equality bit for bit first (one pass, the common case), else go
    straight to the errors (which find equality too: a max_abs of 0). ``known``: the
    worst error, as a fraction of its tolerance, that the report's row already holds; a
    passing output whose errors are provably under it (and under 1) is given that bound
    as its ratio instead of the exact one (:func:`skip_below`)."""
    if type(got) is not np.ndarray or type(want) is not np.ndarray:
        got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return Diff(bad=1, size=want.size, kind="shape", got=got.shape, want=want.shape,
                    ratio=float("inf"))
    if got.dtype != want.dtype:
        return Diff(bad=1, size=want.size, kind="dtype", got=str(got.dtype),
                    want=str(want.dtype), ratio=float("inf"))
    if got.size == 0 or (got.size >= _SAME_FROM and got.strides == want.strides
                         and same_memory(got, want)):
        # the same memory in the same layout (a view hook's output on a host backend,
        # or read with its input in one copy, against NumPy's view of that input)
        return EQUAL
    bulk = bulk_function()
    if bulk is not None:  # (one pass where it lies; None: NumPy's passes find how it fails)
        found = bulk([got, want, rtol, atol])[0]
        if found is not None:
            return EQUAL if found[0] == 0.0 else Diff(max_abs=found[0], ratio=found[1],
                                                      size=got.size)
    elif got.size >= NATIVE_FROM and got.dtype.kind == "f":
        found = _native_close(got, want, rtol, atol)
        if found is not None:
            return found
    if (equal_first or got.dtype.kind != "f") and _bitwise_equal(got, want):
        return EQUAL
    if got.dtype.kind != "f":
        bad = got != want
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        return Diff(max_abs=float("nan"), bad=int(bad.sum()), size=got.size, worst=index,
                    got=got[index].item(), want=want[index].item(), ratio=float("inf"))
    fast = _finite_diff(got, want, rtol, atol, skip_below(atol, known))
    if fast is not None:
        return fast
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    misplaced = (nan_g != nan_w) | ((np.isinf(g) | np.isinf(w)) & ~nan_g & ~nan_w & (g != w))
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(all="ignore"):
        err = np.where(finite, np.abs(g - w), 0.0)
        rel = np.where(finite, err / np.maximum(np.abs(w), 1e-300), 0.0)
        ratio = np.where(finite & (err > 0), err / (atol + rtol * np.abs(w)), 0.0)
    excess = ratio > 1.0
    diff = Diff(max_abs=float(err.max()), max_rel=float(rel.max()), size=got.size,
                bad=int((misplaced | excess).sum()))
    diff.ratio = float("inf") if misplaced.any() else float(ratio.max())
    if misplaced.any():
        flat = int(np.argmax(misplaced))
        diff.kind = "NaN/Inf placement"
    else:
        flat = int(np.argmax(ratio))
    diff.worst = tuple(int(i) for i in np.unravel_index(flat, got.shape))
    diff.got, diff.want = float(g[diff.worst]), float(w[diff.worst])
    return diff


def _blockwise(got, want, rtol, atol, work, skip=0.0) -> Diff | None:
    """The passing case of :func:`_finite_diff` on long arrays, a block at a time: the
    same passes, each over a block that stays in the processor's cache (over whole
    arrays of a few MB each pass went to memory: 1.6x the time). EQUAL or a passing
    Diff; None when some element fails or is not finite, or for arrays laid out
    differently (the caller then compares the whole arrays, and finds the worst)."""
    if got.flags.c_contiguous and want.flags.c_contiguous:
        g, w = got.reshape(-1), want.reshape(-1)
    elif got.flags.f_contiguous and want.flags.f_contiguous:
        g, w = got.T.reshape(-1), want.T.reshape(-1)
    else:
        return None
    err_all = scratch(0, work, (_BLOCK,))
    limit_all = scratch(1, work, (_BLOCK,))
    max_abs = worst = 0.0
    size = g.size
    with np.errstate(all="ignore"):
        for start in range(0, size, _BLOCK):
            end = min(start + _BLOCK, size)
            a, b = g[start:end], w[start:end]
            err, limit = err_all[:end - start], limit_all[:end - start]
            np.subtract(a, b, out=err)
            np.abs(err, out=err)
            block_abs = float(err.max())
            if not block_abs <= max_abs:  # larger, or NaN (then max_abs becomes NaN)
                max_abs = block_abs
                if not np.isfinite(max_abs):
                    return None
            if rtol == 0.0 or block_abs == 0.0:
                continue
            if block_abs <= skip:  # under the row's worst ratio: the bound will do
                worst = max(worst, block_abs / atol)
                continue
            np.abs(b, out=limit)
            limit *= work(rtol)
            limit += work(atol)  # > 0: atol is floored at a few smallest normals
            np.divide(err, limit, out=limit)
            worst = max(worst, float(limit.max()))
    if max_abs == 0.0:
        return EQUAL
    if rtol == 0.0:
        worst = max_abs / atol
    return Diff(max_abs=max_abs, ratio=worst, size=got.size) if worst <= 1.0 else None


def _finite_diff(got, want, rtol, atol, skip=0.0) -> Diff | None:
    """The common case, in few passes and the arrays' own precision (float32 for
    float16), in their own layout (no copy of a view): every difference finite. None
    when some is not (NaN, Inf, overflow). A max error up to ``skip`` (see
    :func:`skip_below`) passes with the bound ``max_abs / atol`` as its ratio."""
    work = np.float64 if got.dtype == np.float64 else np.float32
    if got.size >= _BLOCKS_FROM and got.dtype == work:
        found = _blockwise(got, want, rtol, atol, work, skip)
        if found is not None:
            return found
    g, w = got.astype(work, copy=False), want.astype(work, copy=False)
    if g.ndim == 0:  # a 0-d array's arithmetic would give NumPy scalars, which out= refuses
        g, w = g.reshape(1), w.reshape(1)
    with np.errstate(all="ignore"):
        err = np.subtract(g, w, out=scratch(0, work, g.shape))
        np.abs(err, out=err)
        max_abs = float(err.max())
        if not np.isfinite(max_abs):
            return None
        if max_abs == 0.0:  # equal (a NaN would have made max_abs NaN)
            return EQUAL
        if rtol == 0.0 or max_abs <= skip:  # the largest error gives the ratio (or its
            ratio, worst = None, max_abs / atol  # bound, under the row's worst)
        else:
            ratio = np.abs(w, out=scratch(1, work, g.shape))
            ratio *= work(rtol)
            ratio += work(atol)  # > 0: atol is floored at a few smallest normals
            np.divide(err, ratio, out=ratio)
            worst = float(ratio.max())
        diff = Diff(max_abs=max_abs, ratio=worst, size=got.size)
        if worst > 1.0:  # the rest only for the message of a mismatch
            ratio = err / atol if ratio is None else ratio
            diff.bad = int(np.count_nonzero(ratio > 1.0))
            flat = int(ratio.argmax())
            scale = np.maximum(np.abs(w), np.finfo(work).tiny)
            diff.max_rel = float(np.divide(err, scale, out=scale).max())
            diff.worst = tuple(int(i) for i in np.unravel_index(flat, got.shape))
            diff.got, diff.want = float(got[diff.worst]), float(want[diff.worst])
    return diff
