"""PyTorch's process-wide switches that training scripts set first, with what each means
on fastnn: ``fnn.Size``, the memory formats (``fnn.channels_last`` ...),
``set_num_threads``/``get_num_threads`` (the host BLAS threads of the NumPy backend),
``use_deterministic_algorithms`` (recorded and asked back), and the attributes of
``torch.backends.cudnn``/``torch.backends.cuda.matmul`` that scripts assign, and the
attention-kernel switches of ``torch.backends.cuda`` (kept; every choice runs one op).
"""

from __future__ import annotations

import contextlib
import functools
import os
from types import SimpleNamespace

_state = {"deterministic": False, "warn_only": False}


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple of ints (``x.shape == fnn.Size([2, 3])``), what
    ``x.shape`` and ``x.size()`` return.

    ``repr`` is PyTorch's (``fastnn.Size([2, 3])``); ``str`` (and so an f-string) is the
    tuple's ``(2, 3)``, as the shapes in fastnn's messages read.
    """

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        if any(isinstance(s, bool) or not isinstance(s, int) for s in sizes):
            raise TypeError(f"Size: expected a sequence of ints, got {sizes!r}")
        return super().__new__(cls, sizes)

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        total = 1
        for s in self:
            total *= s
        return total

    def __repr__(self) -> str:
        return f"fastnn.Size({list(self)})"

    __str__ = tuple.__repr__

    # a sum with a tuple and a repeat are Sizes too, as PyTorch's (the checks are skipped:
    # the parts are Sizes' ints). NOTE: a slice stays a tuple: a Python __getitem__ would
    # add ~300 ns to every x.shape[i] of the ops' hot path (PyTorch's s[1:] is a Size).
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _new_tuple(Size, _tuple_add(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _new_tuple(Size, _tuple_add(other, self))

    def __mul__(self, count):
        return _new_tuple(Size, _tuple_mul(self, count))

    __rmul__ = __mul__


_new_tuple, _tuple_add, _tuple_mul = tuple.__new__, tuple.__add__, tuple.__mul__


class memory_format:
    """A memory format, as ``torch.memory_format``: ``fnn.contiguous_format``,
    ``channels_last``, ``channels_last_3d``, ``preserve_format``. fastnn's tensors keep
    row-major layouts: ``model.to(memory_format=fnn.channels_last)`` and
    ``x.contiguous(memory_format=...)`` are accepted and change no value (only strides
    would differ from PyTorch's); ``x.is_contiguous(memory_format=...)`` answers from x's
    strides."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"fastnn.{self.name}"

    def __reduce__(self):
        return _memory_format, (self.name,)


contiguous_format = memory_format("contiguous_format")
"""Row-major (C) order, fastnn's layout."""
channels_last = memory_format("channels_last")
"""NHWC order for 4-D tensors: accepted; fastnn's layouts stay row-major."""
channels_last_3d = memory_format("channels_last_3d")
"""NDHWC order for 5-D tensors: accepted; fastnn's layouts stay row-major."""
preserve_format = memory_format("preserve_format")
"""Keep the input's format (row-major in fastnn)."""
MEMORY_FORMATS = {f.name: f for f in (contiguous_format, channels_last, channels_last_3d,
                                      preserve_format)}



class layout:
    """A tensor layout, as ``torch.layout``: fastnn's tensors are all ``fnn.strided``
    (dense, with strides); ``x.layout`` says so."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"fastnn.{self.name}"

    def __reduce__(self):
        return _strided, ()


strided = layout("strided")
"""Dense tensors with strides: every fastnn tensor's layout."""


def _strided() -> layout:
    return strided

def _memory_format(name: str) -> memory_format:
    return MEMORY_FORMATS[name]


def check_memory_format(owner: str, value) -> memory_format | None:
    """``value`` when it is None or a memory format, else TypeError naming ``owner``."""
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(f"{owner}: memory_format must be one of fnn.contiguous_format, "
                        f"fnn.channels_last, fnn.channels_last_3d or fnn.preserve_format, "
                        f"got {value!r}")
    return value


def _threadpools():
    try:
        import threadpoolctl
    except ImportError as err:  # an optional dependency (scikit-learn brings it)
        raise RuntimeError("set_num_threads/get_num_threads need threadpoolctl to reach "
                           "NumPy's BLAS threads: pip install threadpoolctl") from err
    return threadpoolctl


def set_num_threads(n: int) -> None:
    """Use ``n`` host threads in the NumPy backend's BLAS (as ``torch.set_num_threads``,
    which sets PyTorch's CPU threads). Other backends keep their own threads."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive int, got {n!r}")
    _threadpools().threadpool_limits(n, user_api="blas")


def get_num_threads() -> int:
    """The host BLAS threads the NumPy backend uses (the most of any BLAS loaded)."""
    pools = [p for p in _threadpools().threadpool_info() if p.get("user_api") == "blas"]
    return max((p["num_threads"] for p in pools), default=os.cpu_count() or 1)


_INTEROP = [1]


def set_num_interop_threads(n: int) -> None:
    """PyTorch's inter-op thread count, recorded (fastnn runs one op at a time on the host:
    there is no inter-op pool to size)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_interop_threads: expected a positive int, got {n!r}")
    _INTEROP[0] = n


def get_num_interop_threads() -> int:
    """What :func:`set_num_interop_threads` recorded (1 at start)."""
    return _INTEROP[0]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record PyTorch's determinism switch, and nothing more: PyTorch then refuses its
    nondeterministic CUDA kernels; fastnn keeps no list of such kernels, so none is
    refused (the NumPy and OpenCL backends' reductions run in a fixed order; the cuda
    backend's scatter-adds use atomics and may not)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be True or False, got "
                        f"{mode!r}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """What :func:`use_deterministic_algorithms` last recorded (False at start)."""
    return _state["deterministic"]


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch's switch that flushes denormal floats to zero on the CPU. fastnn's backends
    have no such mode: nothing changes and the answer is False, what PyTorch answers on a
    CPU that cannot flush (denormals keep their values)."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal: mode must be True or False, got {mode!r}")
    return False


def is_storage(obj) -> bool:
    """False: fastnn has no storage objects (``torch.is_storage`` asks whether ``obj`` is
    a ``torch.UntypedStorage`` or ``TypedStorage``)."""
    return False


def backend_switches(target) -> None:
    """Give ``target`` (``fnn.backends``) PyTorch's ``cudnn``, ``cuda.matmul``, ``mps``,
    ``mkldnn`` and ``opt_einsum`` attributes, so that ``torch.backends.cudnn.benchmark =
    True`` runs: fastnn has no cuDNN autotuner or TF32 switch to drive, so the values are
    only kept."""
    target.cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False,
                                   allow_tf32=True, is_available=lambda: False)
    matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)
    target.cuda = SimpleNamespace(matmul=matmul, is_built=lambda: False, sdp_kernel=sdp_kernel)
    for kind in _SDP:  # enable_flash_sdp(flag), flash_sdp_enabled(), ...
        setattr(target.cuda, f"enable_{kind}_sdp", functools.partial(_enable_sdp, kind))
        setattr(target.cuda, f"{kind}_sdp_enabled", functools.partial(_SDP.__getitem__, kind))
    target.mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
    target.mkldnn = SimpleNamespace(enabled=True, is_available=lambda: False)
    target.opt_einsum = SimpleNamespace(enabled=True, strategy="auto",
                                        is_available=lambda: False)


_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
"""PyTorch's switches of its attention kernels (``torch.backends.cuda.enable_flash_sdp``).
fastnn's attention is one op of each backend, which every choice runs: they are kept."""


def _enable_sdp(kind: str, enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enable_{kind}_sdp: expected True or False, got {enabled!r}")
    _SDP[kind] = enabled


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """PyTorch's deprecated ``torch.backends.cuda.sdp_kernel`` (gpt-fast decodes under it):
    the switches set for the block and put back after; results do not change."""
    previous = dict(_SDP)
    given = {"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient,
             "cudnn": enable_cudnn}
    for kind, flag in given.items():
        _enable_sdp(kind, flag)
    try:
        yield {}
    finally:
        _SDP.update(previous)
