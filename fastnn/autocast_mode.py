"""``fnn.autocast`` (also ``fnn.amp.autocast``, ``fnn.cuda.amp.autocast``,
``fnn.cpu.amp.autocast``): PyTorch's mixed-precision regions, and the functions that ask
and set their thread-local state (``fnn.is_autocast_enabled``, ``fnn.get_autocast_dtype``...).

Inside ``with fnn.autocast("cuda"):`` the ops of :data:`fastnn.ops.autocasting.TABLE` on
cuda tensors cast their inputs as PyTorch's do (matmul, linear, convolutions in float16;
softmax, losses, norms in float32; cat, stack... to the widest input type). The device
type is a backend name (``"cpu"``, ``"cuda"``, ``"opencl"``, a third-party one); tensors
of another device type are left alone. The default dtype is PyTorch's (float16, bfloat16
on cpu). A backend that lacks the dtype raises at construction, when the region is
enabled, instead of silently computing in another precision: fastnn's cpu backend has
bfloat16 only where ml_dtypes is installed, and without it ``fnn.autocast("cpu")`` asks
for ``dtype=fnn.float16``.

Where fastnn still differs from PyTorch in a region on cuda: ``fnn.linalg``'s norms are
not cast to float32, and a PackedSequence into a recurrent layer is not cast. Ops of
PyTorch's lists that fastnn lacks (``addbmm``, ``addr``, ``chain_matmul``, ``pdist``...)
are simply absent.
"""

from __future__ import annotations

import functools
import threading
import warnings

from fastnn.api import dtypes, registry
from fastnn.ops import autocasting
from fastnn.ops.autocasting import state

_LOW_DTYPES = ("float16", "bfloat16")


def _device_type(op: str, device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"{op}: expected `device_type` of type `str`, got: "
                         f"`{type(device_type)}`")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ``device_type`` names an installed backend (cuda and cpu always do, as in
    PyTorch; an unusable one disables its regions with a warning)."""
    return device_type in ("cpu", "cuda") or device_type in registry._discover()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread (no argument: cuda,
    as PyTorch)."""
    name = "cuda" if device_type is None else _device_type("is_autocast_enabled", device_type)
    return state.enabled.get(name, False)


def get_autocast_dtype(device_type: str):
    """The dtype ``device_type``'s regions cast to (PyTorch's defaults: float16; bfloat16
    on cpu)."""
    name = _device_type("get_autocast_dtype", device_type)
    return state.dtypes.get(name) or autocasting.default_dtype(name)


def get_autocast_gpu_dtype():
    """PyTorch's older spelling of ``get_autocast_dtype("cuda")`` (which Hugging Face's
    attention code still calls)."""
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype():
    """PyTorch's older spelling of ``get_autocast_dtype("cpu")``."""
    return get_autocast_dtype("cpu")


def is_autocast_cpu_enabled() -> bool:
    """PyTorch's older spelling of ``is_autocast_enabled("cpu")``."""
    return is_autocast_enabled("cpu")


def set_autocast_enabled(device_type, enabled=None) -> None:
    """PyTorch's ``set_autocast_enabled(device_type, enabled)`` (or ``(enabled)``: cuda)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    name = _device_type("set_autocast_enabled", device_type)
    autocasting.set_region(name, bool(enabled), get_autocast_dtype(name))


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype ``device_type``'s regions cast to in this thread (as PyTorch's)."""
    name = _device_type("set_autocast_dtype", device_type)
    autocasting.set_region(name, is_autocast_enabled(name), dtypes.as_dtype(dtype))


def is_autocast_cache_enabled() -> bool:
    """Whether a region reuses the cast of a parameter (a leaf that requires grad)."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the reuse of parameter casts in a region on or off for this thread."""
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the casts of parameters kept by the regions of this thread."""
    autocasting.clear_cache()


def _check_backend(device_type: str, dtype) -> bool:
    """True when ``device_type``'s regions can run; False (with PyTorch's warning) when the
    backend is unusable here; RuntimeError when it lacks ``dtype``."""
    if device_type not in registry._discover():
        warnings.warn(f"User provided device_type of '{device_type}', but the {device_type} "
                      "backend is not installed. Disabling autocast.", stacklevel=3)
        return False
    record = registry.get_backend(device_type, require=False).record
    if not record.available:
        warnings.warn(f"User provided device_type of '{device_type}', but it is not "
                      f"available ({record.reason}). Disabling autocast.", stacklevel=3)
        return False
    if record.dtypes and dtype.name not in record.dtypes:
        fix = ("pass dtype=fnn.float16: fnn.autocast('cpu', dtype=fnn.float16)"
               if "float16" in record.dtypes else "run this region without autocast")
        raise RuntimeError(f"autocast({device_type!r}): the {device_type} backend has no "
                           f"{dtype.name} (its dtypes: {', '.join(record.dtypes)}); {fix}")
    return True


class autocast:
    """PyTorch's ``torch.autocast(device_type, dtype=None, enabled=True,
    cache_enabled=None)``: a context manager or decorator for a mixed-precision region.

    Regions nest (``enabled=False`` inside turns it off); the state is per thread.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        # "cuda:0" names the device type cuda, as PyTorch takes it
        self.device = _device_type("autocast", device_type).split(":")[0]
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{self.device}' (installed backends: "
                               f"{', '.join(sorted(registry._discover()))})")
        self.fast_dtype = (get_autocast_dtype(self.device) if dtype is None
                           else dtypes.as_dtype(dtype))
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        enabled = bool(enabled)
        if enabled and self.fast_dtype.name not in _LOW_DTYPES:
            warnings.warn(f"In {self.device} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{self.device} Autocast only supports dtypes "
                          "of fastnn.bfloat16, fastnn.float16 currently.", stacklevel=2)
            enabled = False
        if enabled:
            enabled = _check_backend(self.device, self.fast_dtype)
        self._enabled = enabled
        self._saved: dict = {}  # thread id -> stack of the states to restore

    def __enter__(self):
        saved = (is_autocast_enabled(self.device), get_autocast_dtype(self.device),
                 state.cache_enabled)
        self._saved.setdefault(threading.get_ident(), []).append(saved)
        autocasting.set_region(self.device, self._enabled, self.fast_dtype)
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        enabled, dtype, cache_enabled = self._saved[threading.get_ident()].pop()
        state.nesting -= 1
        if state.nesting == 0:
            autocasting.clear_cache()
        autocasting.set_region(self.device, enabled, dtype)
        state.cache_enabled = cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(func).__name__}. Did you mean to use autocast as a context "
                            "manager? For example:\n    with fnn.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast_inputs(value, device_type: str, dtype):
    from fastnn.ops.tensor import Tensor

    if isinstance(value, Tensor):
        floating = value._dtype.is_floating and value._dtype is not dtypes.float64
        return value.to(dtype) if floating and value._device.type == device_type else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_inputs(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """PyTorch's ``torch.amp.custom_fwd``: for ``forward(ctx, ...)`` of an
    ``fnn.autograd.Function``. With ``cast_inputs``, inside an enabled region the
    floating inputs of ``device_type`` are cast to it and forward runs with autocast
    off; either way ``custom_bwd`` runs backward in forward's autocast state."""
    _device_type("custom_fwd", device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        dtype = dtypes.as_dtype(cast_inputs)
        with autocast(device_type, enabled=False):
            return fwd(*_cast_inputs(args, device_type, dtype),
                       **_cast_inputs(kwargs, device_type, dtype))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """PyTorch's ``torch.amp.custom_bwd``: ``backward(ctx, ...)`` runs in the autocast
    state its ``custom_fwd`` forward ran in."""
    _device_type("custom_bwd", device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.",
                  FutureWarning, stacklevel=3)


class cuda_autocast(autocast):
    """PyTorch's ``torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)``
    (deprecated there, with a FutureWarning: ``fnn.autocast("cuda", ...)``)."""

    def __init__(self, enabled: bool = True, dtype=dtypes.float16, cache_enabled: bool = True):
        _deprecated("torch.cuda.amp.autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class cpu_autocast(autocast):
    """PyTorch's ``torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)``
    (deprecated there, with a FutureWarning: ``fnn.autocast("cpu", ...)``)."""

    def __init__(self, enabled: bool = True, dtype=dtypes.bfloat16, cache_enabled: bool = True):
        _deprecated("torch.cpu.amp.autocast", "torch.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


cuda_autocast.__name__ = cuda_autocast.__qualname__ = "autocast"
cpu_autocast.__name__ = cpu_autocast.__qualname__ = "autocast"

__all__ = [
    "autocast", "clear_autocast_cache", "custom_bwd", "custom_fwd", "get_autocast_dtype",
    "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_cpu_enabled",
    "is_autocast_available",
    "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled",
]
