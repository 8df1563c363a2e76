"""The cpu backend's loops in C, compiled on first use where a C compiler is found.

The recurrent layers (:file:`native_recurrent.c`): an LSTM step is a GEMM and a few
elementwise passes over (H, N) blocks; in NumPy that is 15 calls a step (7 forward, 8
backward; the GRU's 17), each paying NumPy's fixed cost, 64 times a sequence. The C
source runs a layer's whole time loop in one call:
each step's GEMM through the same BLAS NumPy's products use (or MKL's, where
fastnn_cpu.mkl_gemm took it), reached by a function pointer, and the step's gates and
state in one pass (float32's tanh a branch-free polynomial that vectorises; float64's
the C library's). Batch and layer normalisation (:file:`native_norm.c`): two passes
each way where NumPy makes seven or more. relu, its gradient, a Linear's bias add with
or without relu, float32 GELU and its gradient, short rows' maxima and attention's
float32 softmax down the score columns and its backward (:file:`native_act.c`): one
pass each (the softmax three, in L1) where NumPy makes two to eighteen.
conv1d's and conv2d's tap products (:file:`native_conv.c`): a GEMM a sample and tap,
looped in C.

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


def _gemms(mkl: bool = True):
    """({"f": address, "d": address}, ilp64) of the cblas_?gemm to call, or None: MKL's
    where it took NumPy's products (``mkl``), else NumPy's own BLAS (then MKL's where that
    has no cblas symbol)."""
    if mkl and mkl_gemm.VERSION is not None:  # MKL took NumPy's products: its GEMM here too
        return _mkl_gemms()
    found = _numpy_gemms()
    if found is None and mkl_gemm.VERSION is not None:
        return _mkl_gemms()
    return found


def _mkl_gemms():
    fns = mkl_gemm._FOUND[0]
    return {c: ctypes.cast(fns[c], ctypes.c_void_p).value for c in "fd"}, False


def _numpy_gemms():
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


def _typed_kinds(target, lib, kinds: dict, lead: list = ()) -> None:
    """``target.<kind>`` = {dtype char: ``lib``'s ``fastnn_<kind>_f32`` / ``_f64``, typed}
    for each kind of ``kinds`` (kind -> its argument types after ``lead``)."""
    for kind, argtypes in kinds.items():
        setattr(target, kind, {char: build.typed(lib, f"fastnn_{kind}_f{bits}",
                                                 [*lead, *argtypes])
                               for char, bits in (("f", 32), ("d", 64))})


def _once(cache: list, load):
    """The library ``load()`` gives ((entry points or None, reason)), kept in ``cache`` (a
    list, which tests swap) from the first call on."""
    if not cache:
        cache.append(load())
    return cache[0][0]


def dense(*arrays) -> bool:
    """Whether the C loops take these arrays as they are: float32 or float64, all of the
    first's dtype, each C-contiguous."""
    dtype = arrays[0].dtype
    return dtype.char in ("f", "d") and all(
        a.dtype == dtype and a.flags.c_contiguous for a in arrays)


class _Native:
    """The loaded library's entry points, typed."""

    def __init__(self, lib: ctypes.CDLL, gemms: dict, ilp64: bool):
        ptr, i64, c_int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        self.gemm, self.ilp64 = gemms, int(ilp64)
        kinds = {  # each takes the GEMM's address and whether it is ILP64 first
            "lstm_forward": [i64, i64, i64, i64, ptr, ptr, ptr, ptr],
            "lstm_backward": [i64, i64, i64, ptr, ptr, i64, ptr, i64, ptr, i64, ptr, ptr, ptr,
                              ptr],
            "gru_forward": [i64, i64, i64, i64, ptr, ptr, ptr],
            "gru_backward": [i64, i64, i64, i64, ptr, ptr, ptr, ptr, ptr, ptr],
        }
        _typed_kinds(self, lib, kinds, [ptr, c_int])
        self.tanh_f32 = build.typed(lib, "fastnn_tanh_f32", [ptr, ptr, i64])


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
    """The loaded recurrent loops, or None (NumPy's loops); built on the first call."""
    return _once(_LOADED, _load)


class _Norm:
    """The normalisation library's entry points (native_norm.c: batch and layer norm),
    typed."""

    def __init__(self, lib: ctypes.CDLL):
        ptr, i64, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
        kinds = {"bn_train": [i64, i64, i64, ptr, ptr, ptr, f64, ptr, ptr, ptr],
                 "bn_backward": [i64, i64, i64, ptr, ptr, ptr, ptr, ptr, f64, ptr, ptr, ptr],
                 "ln_train": [i64, i64, ptr, ptr, ptr, f64, ptr, ptr, ptr],
                 "ln_backward": [i64, i64] + [ptr] * 9}
        _typed_kinds(self, lib, kinds)


_NORM_SOURCE = Path(__file__).with_name("native_norm.c")
#: its sums vectorise only where the compiler may reorder additions
_NORM_FLAGS = build.FLAGS + ("-fassociative-math", "-fno-signed-zeros")
_NORM: list = []  # [(_Norm or None, reason)] once loaded


def norm_library():
    """The loaded batch and layer normalisation loops, or None (NumPy's); built on the
    first call."""
    def load():
        lib, why = build.load(_NORM_SOURCE, _VARIABLE, "the cpu backend's C loops",
                              _NORM_FLAGS)
        return None if lib is None else _Norm(lib), why

    return _once(_NORM, load)


class _Act:
    """The elementwise library's entry points (native_act.c), typed: {dtype char: fn}."""

    def __init__(self, lib: ctypes.CDLL):
        ptr, i64 = ctypes.c_void_p, ctypes.c_int64
        kinds = {"relu": [i64, ptr, ptr], "relu_backward": [i64, ptr, ptr, ptr],
                 "bias_act": [i64, i64, ptr, ptr, ptr, i64], "row_max": [i64, i64, ptr, ptr],
                 "index_add_rows": [i64, i64, ptr, ptr, ptr]}
        _typed_kinds(self, lib, kinds)
        c_float = ctypes.c_float
        self.gelu_f32 = build.typed(lib, "fastnn_gelu_f32", [i64, ptr, ptr, c_float, ptr])
        self.gelu_backward_f32 = build.typed(lib, "fastnn_gelu_backward_f32",
                                             [i64, ptr, ptr, ptr, c_float, c_float, ptr])
        self.softmax_rows_f32 = build.typed(lib, "fastnn_softmax_rows_f32",
                                            [i64, i64, ptr, ptr, ptr, ptr])
        self.softmax_cols_f32 = build.typed(lib, "fastnn_softmax_cols_f32",
                                            [i64, i64, i64, ptr, ptr])
        self.softmax_cols_backward_f32 = build.typed(
            lib, "fastnn_softmax_cols_backward_f32", [i64, i64, i64, ptr, ptr, c_float])


_ACT_SOURCE = Path(__file__).with_name("native_act.c")
_ACT: list = []  # [(_Act or None, reason)] once loaded

#: Fewest elements for which the elementwise C loops are called: ctypes' call costs
#: about 2 us, NumPy's passes over a few thousand elements as little.
ACT_MIN_SIZE = 4096


def act_library():
    """The loaded elementwise loops (relu and its gradient, the bias add, float32 GELU and
    its gradient, row maxima, the row softmax, attention's column softmax), or None
    (NumPy's); built on the first call."""
    def load():
        lib, why = build.load(_ACT_SOURCE, _VARIABLE, "the cpu backend's C loops")
        return None if lib is None else _Act(lib), why

    return _once(_ACT, load)


class _Conv:
    """The conv tap loops' entry points (native_conv.c), typed: {dtype char: fn}, each
    taking the GEMM's address and whether it is ILP64 first (``gemm``, ``ilp64``)."""

    def __init__(self, lib: ctypes.CDLL, gemms: dict, ilp64: bool):
        ptr, i64, c_int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        self.gemm, self.ilp64 = gemms, int(ilp64)
        taps = [i64] * 5 + [ptr, i64, ptr, ptr, ptr]
        taps2d = [i64] * 6 + [ptr, i64, i64, ptr, ptr, ptr, ptr]
        _typed_kinds(self, lib, {"conv1d_taps": taps, "conv1d_taps_weight": taps + [i64],
                                 "conv2d_taps": taps2d, "conv2d_taps_weight": taps2d + [i64]},
                     [ptr, c_int])


_CONV_SOURCE = Path(__file__).with_name("native_conv.c")
_CONV: list = []  # [(_Conv or None, reason)] once loaded


def conv_library():
    """The loaded conv1d and conv2d tap loops, or None (MKL's or NumPy's batched products);
    built on the first call."""
    def load():
        lib, why = build.load(_CONV_SOURCE, _VARIABLE, "the cpu backend's C loops")
        # NumPy's OpenBLAS even where MKL takes the products: on the taps' (16-32, 16-32)
        # blocks summed over 256-1024 positions MKL's sums carried 2-2.5x OpenBLAS's
        # rounding error (float32, against float64), at no gain in speed (one Xeon thread)
        gemms = None if lib is None else _gemms(mkl=False)
        if lib is not None and gemms is None:
            lib, why = None, "NumPy (no cblas_sgemm in NumPy's BLAS library or the process)"
        return None if lib is None else _Conv(lib, *gemms), why

    return _once(_CONV, load)


def act_for(x, *others):
    """The elementwise loops when they take these arrays: x float32 or float64 of at
    least ACT_MIN_SIZE elements, C-contiguous, ``others`` C-contiguous of its dtype;
    else None."""
    return act_library() if x.size >= ACT_MIN_SIZE and dense(x, *others) else None


def status() -> str:
    """Whether the C loops are in use, and why (for ``fastnn info``)."""
    library()
    norm_library()
    act_library()
    conv_library()
    return (f"recurrent layers: {_LOADED[0][1]}; batch and layer norm: {_NORM[0][1]}; "
            f"elementwise: {_ACT[0][1]}; conv taps: {_CONV[0][1]}")


address = build.address


if __name__ == "__main__":  # python -m fastnn_cpu.native: build now and say what happened
    print(status(), file=sys.stdout)
