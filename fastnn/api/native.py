"""C helpers compiled on first use where a C compiler is found, for backends and the core.

A helper is one C source file, compiled once per machine and source text (``cc -O3
-march=native``) into fastnn's cache folder (``FASTNN_CACHE``, else the platform's,
under ``native/``) and loaded with ctypes; ``CC`` names the compiler. Each user has a
switch of its own (an environment variable: ``auto``, the default, uses C where it
builds and NumPy elsewhere, silently; ``on`` makes a failed build an error naming what
failed; ``off`` never builds), and says which is in use and why. The helpers change no
result beyond float rounding: every one has a NumPy path beside it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

MODES = ("auto", "on", "off")
#: -fno-math-errno and -fno-trapping-math let loops with float tests and floor() vectorise
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c99", "-fno-math-errno",
         "-fno-trapping-math")


def mode(variable: str) -> str:
    """The switch ``variable`` (auto, on or off; a clear error for anything else)."""
    value = os.environ.get(variable, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"{variable} must be one of {', '.join(MODES)}, got {value!r}")
    return value


def compiler() -> str:
    """``CC``, else cc or gcc on the PATH."""
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not found:
        raise OSError("no C compiler (cc or gcc on PATH; CC names another)")
    return found


def _machine() -> str:
    """What -march=native depends on: the processor's model and feature flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() + platform.processor()
    keep = [line for line in text.splitlines()
            if line.startswith(("model name", "flags", "Features"))]
    return platform.machine() + "\n".join(dict.fromkeys(keep))


_LOCAL_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def _text(source: Path, seen=None) -> bytes:
    """The source and every header it includes with quotes from its folder, in order:
    what a build depends on (a changed header makes a new library, as a changed source
    does)."""
    seen = {source.resolve()} if seen is None else seen
    text = source.read_bytes()
    parts = [text]
    for name in _LOCAL_INCLUDE.findall(text):
        header = (source.parent / name.decode()).resolve()
        if header not in seen and header.is_file():
            seen.add(header)
            parts.append(_text(header, seen))
    return b"\0".join(parts)


def build(source: Path, cc: str, flags=FLAGS) -> Path:
    """The shared library built from ``source`` with ``cc`` (built now unless cached)."""
    from fastnn.api.certificates import cache_dir

    text = _text(Path(source))
    key = hashlib.sha256(b"\0".join([text, " ".join([cc, *flags]).encode(),
                                     _machine().encode()])).hexdigest()[:20]
    folder = cache_dir() / "native"
    target = folder / f"{Path(source).stem}-{key}.so"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(suffix=".so", dir=folder)  # (processes may race here)
    os.close(fd)
    try:
        done = subprocess.run([cc, *flags, "-o", scratch, str(source), "-lm"],
                              capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise OSError(f"{cc} failed: {done.stderr.strip()[:500]}")
        os.replace(scratch, target)  # atomic: a reader sees no half-written library
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


def load(source: Path, variable: str, what: str, flags=FLAGS, python: bool = False) -> tuple:
    """(ctypes.CDLL or None, the reason in words) for ``source`` under the switch
    ``variable``; ``what`` names the helper in the error of ``on``. ``python``: the
    source uses Python's C API (built against this interpreter's headers, loaded as a
    ctypes.PyDLL: its functions run holding the GIL and may raise)."""
    chosen = mode(variable)
    if chosen == "off":
        return None, f"off ({variable}=off)"
    try:
        cc = compiler()
        if python:
            flags = (*flags, "-I" + sysconfig.get_paths()["include"])
        path = build(source, cc, flags)
        kind = ctypes.PyDLL if python else ctypes.CDLL
        return kind(str(path)), f"C ({path.name}, {cc})"
    except (OSError, subprocess.SubprocessError) as exc:
        if chosen == "on":
            raise RuntimeError(f"{variable}=on, but {what} cannot be built: {exc}; install a C "
                               f"compiler (or set CC), or unset {variable}") from exc
        return None, f"NumPy ({exc})"


def typed(lib, name: str, argtypes: list, restype=None):
    """``lib``'s function ``name`` with its ctypes argument and result types set."""
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = argtypes, restype
    return fn


def address(a) -> int:
    """Where a NumPy array's data starts. A writable C- or F-contiguous array's (a
    transposed operand's too) is read through the buffer protocol (0.65 us, where
    ``__array_interface__`` and ``.ctypes`` build an object and take 1.1-1.3 us: a third
    of a small C call); others' through the interface."""
    flags = a.flags
    if flags.writeable and a.size:
        if flags.c_contiguous:
            return ctypes.addressof(_CHAR.from_buffer(a))
        if flags.f_contiguous:  # (its transpose is C-contiguous, from the same address)
            return ctypes.addressof(_CHAR.from_buffer(a.T))
    return a.__array_interface__["data"][0]


_CHAR = ctypes.c_char
