"""Matrix products through Intel MKL's GEMM where MKL is installed (``pip install
"fastnn-backend-cpu[mkl]"``), NumPy's own BLAS elsewhere.

NumPy's wheels bring OpenBLAS; PyTorch's CPU wheels bring MKL, and on the GEMMs of a
small MLP (128 x 784 @ 784 x 512 and its gradients) MKL's single-thread sgemm took
0.81-0.89x OpenBLAS 0.3.31's time (SkylakeX kernels, one Xeon thread; OpenBLAS 0.3.34
read the same as 0.3.31), the whole of the gap between fastnn's MLP step and PyTorch's.
The library is reached by ctypes (its ``cblas_?gemm``, about 3 us of call overhead), so
only products of at least :data:`MIN_MNK` multiply-adds go there: at (32, 64) @ (64, 256)
the call cost 1.7x NumPy's, from (32, 256) @ (256, 256) it gained 13-25%.

``FASTNN_CPU_GEMM`` chooses: ``auto`` (the default: MKL when found), ``mkl`` (an error
when it is not) or ``numpy``. ``FASTNN_MKL_LIBRARY`` names the library file when it is
somewhere else than the environment's ``lib`` folder (where the ``mkl`` wheel puts it).
MKL's threads follow ``MKL_NUM_THREADS`` and ``fnn.set_num_threads`` (threadpoolctl sees
the library once loaded).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys

import numpy as np

from fastnn.api.native import address as _address  # (a third of .ctypes.data's cost)

#: Fewest multiply-adds (m * k * n) of a product sent to MKL.
MIN_MNK = 1 << 21

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_MODES = ("auto", "mkl", "numpy")
_INSTALL = 'pip install "fastnn-backend-cpu[mkl]"'


def _candidates() -> list[str]:
    named = os.environ.get("FASTNN_MKL_LIBRARY")
    if named:
        return [named]
    found = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        for pattern in ("lib/libmkl_rt.so*", "lib/libmkl_rt*.dylib", "Library/bin/mkl_rt*.dll"):
            found += sorted(glob.glob(os.path.join(prefix, pattern)))
    system = ctypes.util.find_library("mkl_rt")
    return found + ([system] if system else [])


def _load():
    """({dtype char: ?gemm}, {dtype char: ?gemm_batch_strided, where MKL has it}, version
    text) of the first MKL that loads, or None."""
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            gemms = {"f": lib.cblas_sgemm, "d": lib.cblas_dgemm}
        except (OSError, AttributeError):
            continue
        ptr, c_int = ctypes.c_void_p, ctypes.c_int
        batched = {}
        for char, scalar in (("f", ctypes.c_float), ("d", ctypes.c_double)):
            fn = gemms[char]
            fn.restype = None
            fn.argtypes = [c_int] * 6 + [scalar, ptr, c_int, ptr, c_int, scalar, ptr, c_int]
            fn = getattr(lib, f"cblas_{'s' if char == 'f' else 'd'}gemm_batch_strided", None)
            if fn is not None:  # (MKL 2020 and later)
                fn.restype = None
                fn.argtypes = [c_int] * 6 + [scalar, ptr, c_int, c_int, ptr, c_int, c_int,
                                             scalar, ptr, c_int, c_int, c_int]
                batched[char] = fn
        return gemms, batched, _version(lib)
    return None


def _version(lib) -> str:
    """"MKL 2026.2" (the number from MKL's own version text), or "MKL"."""
    text = ctypes.create_string_buffer(256)
    try:
        lib.mkl_get_version_string(text, len(text))
    except AttributeError:
        return "MKL"
    words = text.value.decode(errors="replace").split()
    found = [w for prev, w in zip(words, words[1:]) if prev == "Version"]
    return f"MKL {found[0].split('-')[0]}" if found else "MKL"


def _choose():
    mode = os.environ.get("FASTNN_CPU_GEMM", "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise ValueError(f"FASTNN_CPU_GEMM must be one of {', '.join(_MODES)}, got {mode!r}")
    if mode == "numpy":
        return None
    found = _load()
    if found is None and mode == "mkl":
        where = os.environ.get("FASTNN_MKL_LIBRARY") or f"{sys.prefix}/lib"
        raise RuntimeError(f"FASTNN_CPU_GEMM=mkl, but no MKL library (libmkl_rt) loads from "
                           f"{where}: {_INSTALL}, set FASTNN_MKL_LIBRARY to the library "
                           f"file, or unset FASTNN_CPU_GEMM")
    return found


_FOUND = _choose()
VERSION = None if _FOUND is None else _FOUND[2]
"""MKL's version text when products go to MKL, else None (NumPy's BLAS)."""


def _operand(x, rows: int, cols: int):
    """(transpose flag, leading dimension) of a 2-D operand BLAS reads in place, or None."""
    if not x.flags.aligned:
        return None
    item = x.itemsize
    s0, s1 = x.strides
    if s1 == item and s0 % item == 0 and s0 // item >= max(1, cols):
        return _NO_TRANS, s0 // item
    if s0 == item and s1 % item == 0 and s1 // item >= max(1, rows):
        return _TRANS, s1 // item
    return None


def _overlaps(out, a, b) -> bool:
    """Whether ``out``'s memory may be an operand's (BLAS would read what it writes;
    np.matmul copies first): a bounds check, no more."""
    return np.may_share_memory(out, a) or np.may_share_memory(out, b)


def _mkl_matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``: through MKL for 2-D float32 or float64 operands of one
    dtype, laid out so that BLAS reads them in place, of at least MIN_MNK multiply-adds
    (``out``, when given, C-contiguous and apart from the operands); else NumPy's."""
    if (a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype.char not in "fd"):
        return np.matmul(a, b, out=out)
    m, k = a.shape
    k2, n = b.shape
    fa = fb = None
    if k == k2 and m * k * n >= MIN_MNK:
        fa, fb = _operand(a, m, k), _operand(b, k, n)
    if fa is None or fb is None or (out is not None and not (
            out.shape == (m, n) and out.dtype == a.dtype and out.flags.c_contiguous
            and not _overlaps(out, a, b))):
        return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty((m, n), a.dtype)
    _FOUND[0][a.dtype.char](_ROW_MAJOR, fa[0], fb[0], m, n, k, 1.0, _address(a), fa[1],
                            _address(b), fb[1], 0.0, _address(out), n)
    return out


_gemm = np.matmul if _FOUND is None else _mkl_matmul


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)``, MKL's GEMM taking the products it can (see
    _mkl_matmul). A C-contiguous stack of matrices times one matrix (a Linear layer on
    (batch, time, features)) is one product of its rows: np.matmul made one GEMM per
    matrix of the stack, 1.1-1.7x the time of the one over (16 * 64, 64) @ (64, 256)
    and its like (one Xeon thread, MKL and OpenBLAS alike)."""
    if (b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous and a.shape[-1] == b.shape[0]
            and (out is None or out.flags.c_contiguous)):
        rows = a.reshape(-1, a.shape[-1])
        flat = _gemm(rows, b, out=None if out is None else out.reshape(-1, b.shape[1]))
        return flat.reshape(a.shape[:-1] + (b.shape[1],)) if out is None else out
    return _gemm(a, b, out=out)


def into(a, b, out, accumulate: bool = False, min_mnk: int = MIN_MNK) -> bool:
    """``out[...] = a @ b`` (``accumulate``: ``+=``) as one MKL call, when MKL is in use,
    ``a`` (m, k) and ``b`` (k, n) are operands of ``out``'s float dtype that BLAS reads in
    place, ``out`` (m, n) has unit inner stride (any row stride: a block of a wider
    array), apart from the operands, and the product holds at least ``min_mnk``
    multiply-adds. Returns whether it ran; the caller does the product otherwise. The
    conv chunks' (C_out, 144) @ (144, 1024) into the output's columns ran 1.2-1.45x
    faster than OpenBLAS's batched small products of the same columns (one Xeon
    thread)."""
    if _FOUND is None or a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        return False
    char = a.dtype.char
    m, k = a.shape
    n = b.shape[1]
    item = out.itemsize
    if (char not in "fd" or b.dtype != a.dtype or out.dtype != a.dtype or b.shape[0] != k
            or out.shape != (m, n) or m * k * n < min_mnk or out.strides[1] != item
            or out.strides[0] % item or out.strides[0] // item < max(1, n)
            or not out.flags.aligned or _overlaps(out, a, b)):
        return False
    fa, fb = _operand(a, m, k), _operand(b, k, n)
    if fa is None or fb is None:
        return False
    _FOUND[0][char](_ROW_MAJOR, fa[0], fb[0], m, n, k, 1.0, _address(a), fa[1],
                    _address(b), fb[1], 1.0 if accumulate else 0.0, _address(out),
                    out.strides[0] // item)
    return True


def shared_left(a, b, out, accumulate: bool) -> bool:
    """``out[i] = a @ b[i]`` (``accumulate``: ``+=``) for every i as one MKL call (its
    strided batch GEMM), when MKL is in use, ``a`` (m, k) and ``b`` (batch, k, n) are
    float operands of ``out``'s dtype that BLAS reads in place (b: unit inner stride),
    ``out`` (batch, m, n) is C-contiguous and the batch holds at least MIN_MNK
    multiply-adds. Returns whether it ran; the caller does the product otherwise. On the
    conv1d taps' (32, 32) @ (32, 256) products over 32 samples, 5 taps accumulated: 0.70
    ms where NumPy's batched matmuls and adds took 0.99 (one Xeon thread)."""
    if _FOUND is None or b.ndim != 3 or a.ndim != 2:
        return False
    char = a.dtype.char
    batched = _FOUND[1].get(char)
    batch, k, n = b.shape
    m = a.shape[0]
    if (batched is None or b.dtype != a.dtype or out.dtype != a.dtype or a.shape[1] != k
            or out.shape != (batch, m, n) or not out.flags.c_contiguous
            or m * k * n * batch < MIN_MNK or _overlaps(out, a, b)):
        return False
    fa, fb = _operand(a, m, k), _operand(b[0], k, n)
    item = b.itemsize
    if (fa is None or fb is None or b.strides[0] < 0 or b.strides[0] % item
            or not b.flags.aligned):
        return False
    batched(_ROW_MAJOR, fa[0], fb[0], m, n, k, 1.0, _address(a), fa[1], 0, _address(b),
            fb[1], b.strides[0] // item, 1.0 if accumulate else 0.0, _address(out), n,
            m * n, batch)
    return True
