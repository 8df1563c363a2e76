"""PyTorch's process-wide switches that training scripts set first, with what each means
on fastnn: ``fnn.Size``, ``set_num_threads``/``get_num_threads`` (the host BLAS threads
of the NumPy backend), ``use_deterministic_algorithms`` (recorded and asked back), and
the attributes of
``torch.backends.cudnn``/``torch.backends.cuda.matmul`` that scripts assign.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

_state = {"deterministic": False, "warn_only": False}


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple of ints (``x.shape == fnn.Size([2, 3])``)."""

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


def backend_switches(target) -> None:
    """Give ``target`` (``fnn.backends``) PyTorch's ``cudnn``, ``cuda.matmul`` and ``mps``
    attributes, so that ``torch.backends.cudnn.benchmark = True`` runs: fastnn has no
    cuDNN autotuner or TF32 switch to drive, so the values are only kept."""
    target.cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False,
                                   allow_tf32=True, is_available=lambda: False)
    matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)
    target.cuda = SimpleNamespace(matmul=matmul, is_built=lambda: False)
    target.mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
