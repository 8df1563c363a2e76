"""The cpu backend's loops in C, compiled on first use where a C compiler is found.

An LSTM step is a GEMM and a few elementwise passes over (H, N) blocks; in NumPy that is
15 calls a step (7 forward, 8 backward; the GRU's 17), each paying NumPy's fixed cost, 64
times a sequence. :file:`native_recurrent.c` runs a layer's whole time loop in one call:
each step's GEMM through the same BLAS NumPy's products use (or MKL's, where
fastnn_cpu.mkl_gemm took it), reached by a function pointer, and the step's gates and
state in one pass (float32's tanh a branch-free polynomial that vectorises; float64's
the C library's).

The source is compiled once per machine and source text (``cc -O3 -march=native``) into
fastnn's cache folder (``FASTNN_CACHE``, else the platform's), and loaded with ctypes.
``FASTNN_CPU_NATIVE`` chooses: ``auto`` (the default: C where it builds, NumPy's loop
elsewhere, silently), ``on`` (an error naming what failed) or ``off``; ``CC`` names the
compiler. :func:`status` says which and why.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from fastnn_cpu import mkl_gemm

_MODES = ("auto", "on", "off")
_SOURCE = Path(__file__).with_name("native_recurrent.c")
_FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=c99", "-fno-math-errno",
          "-fno-trapping-math"]  # (the last two: the loops vectorise)
_ILP64 = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_")  # OpenBLAS built with 64-bit ints
_LP64 = ("scipy_cblas_{}gemm", "cblas_{}gemm")


def _machine() -> str:
    """What -march=native depends on: the processor's model and feature flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() + platform.processor()
    keep = [line for line in text.splitlines()
            if line.startswith(("model name", "flags", "Features"))]
    return platform.machine() + "\n".join(dict.fromkeys(keep))


def _compiler() -> str:
    """``CC``, else cc or gcc on the PATH."""
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not found:
        raise OSError("no C compiler (cc or gcc on PATH; CC names another)")
    return found


def _compile(compiler: str) -> Path:
    """The shared library built from the source (built now unless cached)."""
    from fastnn.api.certificates import cache_dir

    source = _SOURCE.read_bytes()
    key = hashlib.sha256(b"\0".join([source, " ".join([compiler, *_FLAGS]).encode(),
                                     _machine().encode()])).hexdigest()[:20]
    folder = cache_dir() / "native"
    target = folder / f"fastnn_cpu_recurrent-{key}.so"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(suffix=".so", dir=folder)  # (processes may race here)
    os.close(fd)
    try:
        done = subprocess.run([compiler, *_FLAGS, "-o", scratch, str(_SOURCE), "-lm"],
                              capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise OSError(f"{compiler} failed: {done.stderr.strip()[:500]}")
        os.replace(scratch, target)  # atomic: a reader sees no half-written library
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


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

    def __init__(self, path: Path, gemms: dict, ilp64: bool):
        lib = ctypes.CDLL(str(path))
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
    mode = os.environ.get("FASTNN_CPU_NATIVE", "auto").strip().lower() or "auto"
    if mode not in _MODES:
        raise ValueError(f"FASTNN_CPU_NATIVE must be one of {', '.join(_MODES)}, got {mode!r}")
    if mode == "off":
        return None, "off (FASTNN_CPU_NATIVE=off)"
    try:
        compiler = _compiler()
        gemms = _gemms()
        if gemms is None:
            raise OSError("no cblas_sgemm found in NumPy's BLAS library or the process")
        path = _compile(compiler)
        return _Native(path, *gemms), f"C loops ({path.name}, {compiler})"
    except (OSError, subprocess.SubprocessError, AttributeError) as exc:
        if mode == "on":
            raise RuntimeError(f"FASTNN_CPU_NATIVE=on, but the cpu backend's C loops are "
                               f"unavailable: {exc}; install a C compiler (or set CC), or "
                               f"unset FASTNN_CPU_NATIVE") from exc
        return None, f"NumPy loops ({exc})"


_LOADED: list = []  # [(_Native or None, reason)] once loaded


def library():
    """The loaded C loops, or None (NumPy's loops); built on the first call."""
    if not _LOADED:
        _LOADED.append(_load())
    return _LOADED[0][0]


def status() -> str:
    """Whether the C loops are in use, and why (for ``fastnn info``)."""
    library()
    return _LOADED[0][1]


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


if __name__ == "__main__":  # python -m fastnn_cpu.native: build now and say what happened
    print(status(), file=sys.stdout)
