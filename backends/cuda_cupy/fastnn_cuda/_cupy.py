"""cupy, imported so that its absence or a missing driver never breaks ``import fastnn_cuda``.

``cupy`` is the module or None; ``IMPORT_ERROR`` says why it is None. The
probe turns either into the backend's ``reason`` with the install hint.
"""

from __future__ import annotations

from fastnn.api import dtypes as _dtypes

INSTALL_HINT = (
    'install cupy for your CUDA driver with `pip install -e "backends/cuda_cupy[cuda12]"` '
    '(CUDA 12) or `pip install -e "backends/cuda_cupy[cuda13]"` (CUDA 13), on a machine '
    "with an NVIDIA GPU and driver"
)

try:
    import cupy
except Exception as exc:  # ImportError, or a broken CUDA library install
    cupy = None
    IMPORT_ERROR = f"{type(exc).__name__}: {exc}"
else:
    IMPORT_ERROR = ""

# cupy's floats (it has no bfloat16), then every integer dtype and bool
DTYPES = ["float32", "float64", "float16",
          *(name for name in _dtypes.names() if not _dtypes.as_dtype(name).is_floating)]


def _describe(index: int) -> str:
    props = cupy.cuda.runtime.getDeviceProperties(index)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    memory = props["totalGlobalMem"] / 2**30
    return f"{name} (compute {props['major']}.{props['minor']}, {memory:.0f} GiB)"


def probe() -> dict:
    """The ``backend_probe`` answer. Never raises: every failure becomes ``reason``."""
    answer = {"available": False, "reason": "", "devices": [], "dtypes": list(DTYPES),
              "version": "", "host_memory": False}
    if cupy is None:
        answer["reason"] = f"cupy is not importable ({IMPORT_ERROR}); {INSTALL_HINT}"
        return answer
    answer["version"] = f"cupy {cupy.__version__}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count == 0:
            raise RuntimeError("the CUDA runtime reports 0 devices")
        devices = [_describe(i) for i in range(count)]
        with cupy.cuda.Device(0):
            # one tiny op: a driver that lists devices but cannot run kernels fails here
            cupy.zeros(1, dtype=cupy.float32).sum()
    except Exception as exc:
        answer["reason"] = (
            f"no usable CUDA device ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
        )
        return answer
    answer.update(available=True, devices=devices)
    return answer


def device_count() -> int:
    """GPUs visible to cupy (0 when cupy or the driver is missing)."""
    if cupy is None:
        return 0
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0
