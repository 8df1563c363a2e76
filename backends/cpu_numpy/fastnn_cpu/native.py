"""The cpu backend's loops in C, compiled on first use where a C compiler is found.

The recurrent layers (:file:`native_recurrent.c`): an LSTM step is a GEMM and a few
elementwise passes over (H, N) blocks; in NumPy that is 15 calls a step (7 forward, 8
backward; the GRU's 17), each paying NumPy's fixed cost, 64 times a sequence. The C
source runs a layer's whole time loop in one call:
each step's GEMM through the same BLAS NumPy's products use (or MKL's, where
fastnn_cpu.mkl_gemm took it), reached by a function pointer, and the step's gates and
state in one pass (float32's tanh a branch-free polynomial that vectorises; float64's
the C library's). Batch normalisation (:file:`native_norm.c`): two passes each way
where NumPy makes seven or more.

The source is built by :mod:`fastnn.api.native` (once per machine, into fastnn's cache
folder). ``FASTNN_CPU_NATIVE`` chooses: ``auto`` (the default: C where it builds, NumPy's
loops elsewhere, silently), ``on`` (an error naming what failed) or ``off``; ``CC`` names
the compiler. :func:`status` says which and why.
"""

from __future__ import annotations

import ctypes
import glob
import sys
from pathlib import Path

import numpy as np

from fastnn.api import native as build
from fastnn_cpu import mkl_gemm

_VARIABLE = "FASTNN_CPU_NATIVE"
_SOURCE = Path(__file__).with_name("native_recurrent.c")
_ILP64 = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_")  # OpenBLAS built with 64-bit ints
_LP64 = ("scipy_cblas_{}gemm", "cblas_{}gemm")


def _blas_library_paths() -> list:
    """Where NumPy's BLAS may be: the library its wheel bundles, then the system's."""
    root = Path(np.__file__).resolve().parent
    found = []
    for pattern in ("../numpy.libs/lib*openblas*.so*", ".dylibs/lib*openblas*.dylib",
                    "../numpy.libs/*openblas*.dll"):
        found += sorted(glob.glob(str(root / pattern)))
    return found + [None]  # None: symbols already in the process (a system CBLAS)


def _gemms():
    """({"f": address, "d": address}, ilp64) of the cblas_?gemm to call, or None."""
    if mkl_gemm.VERSION is not None:  # MKL took NumPy's products: its GEMM here too
        fns = mkl_gemm._FOUND[0]
        return {c: ctypes.cast(fns[c], ctypes.c_void_p).value for c in "fd"}, False
    for path in _blas_library_paths():
        try:
            lib = ctypes.CDLL(path) if path else ctypes.CDLL(None)
        except OSError:
            continue
        for names, ilp64 in ((_ILP64, True), (_LP64, False)):
            for name in names:
                try:
                    fns = {c: getattr(lib, name.format("s" if c == "f" else "d")) for c in "fd"}
                except AttributeError:
                    continue
                return {c: ctypes.cast(f, ctypes.c_void_p).value for c, f in fns.items()}, ilp64
    return None


class _Native:
    """The loaded library's entry points, typed."""

    def __init__(self, lib: ctypes.CDLL, gemms: dict, ilp64: bool):
        ptr, i64 = ctypes.c_void_p, ctypes.c_int64
        self.gemm, self.ilp64 = gemms, int(ilp64)
        self.forward, self.backward = {}, {}  # the LSTM's, by dtype char
        self.gru_forward, self.gru_backward = {}, {}
        for char, bits in (("f", 32), ("d", 64)):
            fn = getattr(lib, f"fastnn_lstm_forward_f{bits}")
            fn.argtypes = [ptr, ctypes.c_int, i64, i64, i64, i64, ptr, ptr, ptr, ptr]
            fn.restype = None
            self.forward[char] = fn
            fn = getattr(lib, f"fastnn_lstm_backward_f{bits}")
            fn.argtypes = [ptr, ctypes.c_int, i64, i64, i64, ptr, ptr, i64, ptr, i64, ptr, i64,
                           ptr, ptr, ptr, ptr]
            fn.restype = None
            self.backward[char] = fn
            fn = getattr(lib, f"fastnn_gru_forward_f{bits}")
            fn.argtypes = [ptr, ctypes.c_int, i64, i64, i64, i64, ptr, ptr, ptr]
            fn.restype = None
            self.gru_forward[char] = fn
            fn = getattr(lib, f"fastnn_gru_backward_f{bits}")
            fn.argtypes = [ptr, ctypes.c_int, i64, i64, i64, i64, ptr, ptr, ptr, ptr, ptr, ptr]
            fn.restype = None
            self.gru_backward[char] = fn
        self.tanh_f32 = lib.fastnn_tanh_f32
        self.tanh_f32.argtypes = [ptr, ptr, i64]
        self.tanh_f32.restype = None


def _load():
    """(_Native or None, the reason in words)."""
    lib, why = build.load(_SOURCE, _VARIABLE, "the cpu backend's C loops")
    if lib is None:
        return None, why
    gemms = _gemms()
    if gemms is None:
        if build.mode(_VARIABLE) == "on":
            raise RuntimeError(f"{_VARIABLE}=on, but the cpu backend's C loops cannot run: "
                               f"no cblas_sgemm in NumPy's BLAS library or the process; "
                               f"unset {_VARIABLE}")
        return None, "NumPy (no cblas_sgemm in NumPy's BLAS library or the process)"
    return _Native(lib, *gemms), why


_LOADED: list = []  # [(_Native or None, reason)] once loaded


def library():
    """The loaded C loops, or None (NumPy's loops); built on the first call."""
    if not _LOADED:
        _LOADED.append(_load())
    return _LOADED[0][0]


class _Norm:
    """The batch normalisation library's entry points (native_norm.c), typed."""

    def __init__(self, lib: ctypes.CDLL):
        ptr, i64, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
        self.train, self.backward = {}, {}
        for char, bits in (("f", 32), ("d", 64)):
            fn = getattr(lib, f"fastnn_bn_train_f{bits}")
            fn.argtypes = [i64, i64, i64, ptr, ptr, ptr, f64, ptr, ptr, ptr]
            fn.restype = None
            self.train[char] = fn
            fn = getattr(lib, f"fastnn_bn_backward_f{bits}")
            fn.argtypes = [i64, i64, i64, ptr, ptr, ptr, ptr, ptr, f64, ptr, ptr, ptr]
            fn.restype = None
            self.backward[char] = fn


_NORM_SOURCE = Path(__file__).with_name("native_norm.c")
#: its sums vectorise only where the compiler may reorder additions
_NORM_FLAGS = build.FLAGS + ("-fassociative-math", "-fno-signed-zeros")
_NORM: list = []  # [(_Norm or None, reason)] once loaded


def norm_library():
    """The loaded batch normalisation loops, or None (NumPy's); built on the first call."""
    if not _NORM:
        lib, why = build.load(_NORM_SOURCE, _VARIABLE, "the cpu backend's C loops",
                              _NORM_FLAGS)
        _NORM.append((None if lib is None else _Norm(lib), why))
    return _NORM[0][0]


def status() -> str:
    """Whether the C loops are in use, and why (for ``fastnn info``)."""
    library()
    norm_library()
    return f"recurrent layers: {_LOADED[0][1]}; batch norm: {_NORM[0][1]}"


address = build.address


if __name__ == "__main__":  # python -m fastnn_cpu.native: build now and say what happened
    print(status(), file=sys.stdout)
