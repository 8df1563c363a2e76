"""Devices ("cpu", "cuda:1", ...) and the default device that ``fnn.use`` sets."""

from __future__ import annotations

import os
import threading

from fastnn.api.certificates import check_use
from fastnn.api.errors import BackendError
from fastnn.api.fallback import set_fallback
from fastnn.api.registry import backends, get_backend, on_refresh


class Device:
    """A backend name plus a device index; compares equal to its string form."""

    __slots__ = ("backend", "index", "ops", "_str")

    def __init__(self, backend_name: str, index: int = 0):
        backend = get_backend(backend_name)
        count = len(backend.record.devices)
        if count and not 0 <= index < count:
            raise BackendError(
                f"device {backend_name}:{index} does not exist; backend {backend_name!r} "
                f"has {count} device(s): {backend.record.devices}"
            )
        self.backend = backend
        self.index = index
        self.ops = backend.ops
        self._str = backend_name if index == 0 and count <= 1 else f"{backend_name}:{index}"

    @property
    def type(self) -> str:
        return self.backend.name

    def check_dtype(self, dtype, op: str) -> None:
        """TypeError naming ``op`` when this device's backend lists dtypes without ``dtype``
        (a tensor must never be labelled with a dtype its data does not have)."""
        supported = self.backend.record.dtypes
        if supported and dtype.name not in supported:
            raise TypeError(
                f"{op}: {self} does not support {dtype.name}; it supports {', '.join(supported)}"
            )

    def __repr__(self) -> str:
        # PyTorch's form (``device(type='cpu')``, ``device(type='cuda', index=1)``), the
        # index shown where the name shows it
        index = f", index={self.index}" if ":" in self._str else ""
        return f"device(type={self.type!r}{index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self.backend is other.backend and self.index == other.index
        if isinstance(other, str):  # by name: a string never loads a backend to compare
            try:
                return parse(other) == (self.backend.name, self.index)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.backend.name, self.index))

    def __reduce__(self):
        """Pickle and deepcopy as the device string: the copy is the canonical Device of
        that name (tensors compare devices by identity first, and a copied backend would
        not be the loaded one)."""
        return as_device, (self._str,)


class DeviceSpec:
    """A device named but not opened, as ``torch.device``: ``fnn.device("cuda:1")``,
    ``fnn.device("cuda", 1)``, ``fnn.device("cpu")``.

    Making one loads no backend (a script may name "cuda" on a machine without it); it
    goes wherever a device goes (``x.to(fnn.device("cuda"))``, ``device=``), which is
    where a missing backend raises. It compares equal to the :class:`Device` a tensor
    reports and to its string (``fnn.device("cpu") == x.device == "cpu"``); a missing index
    counts as 0 there. ``.type`` is the backend name, ``.index`` the index or None.
    """

    __slots__ = ("type", "index")

    def __init__(self, spec, index=None):
        if isinstance(spec, (Device, DeviceSpec)):
            name, given = spec.type, spec.index
        elif isinstance(spec, str) or (isinstance(spec, int) and not isinstance(spec, bool)):
            if not isinstance(spec, str):  # an accelerator index, as PyTorch's device(0)
                spec = accelerator_index(spec)
            try:
                name, given = parse(spec)
            except ValueError as exc:
                raise ValueError(f"device: {exc}") from None
            given = given if ":" in spec else None
        else:
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:1', got "
                            f"{type(spec).__name__} {spec!r}")
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise ValueError(f"device: index must be an int >= 0, got {index!r}")
            if given is not None and given != index:
                raise ValueError(f"device: {spec!r} already names index {given}; do not pass "
                                 f"index={index} too")
            given = index
        if not name:
            raise ValueError(f"device: no backend name in {spec!r}; expected e.g. 'cuda:1'")
        self.type, self.index = name, given

    def _key(self) -> tuple[str, int]:
        return self.type, self.index or 0

    def __eq__(self, other) -> bool:
        if isinstance(other, DeviceSpec):
            return self._key() == other._key()
        if isinstance(other, Device):
            return self._key() == (other.type, other.index)
        if isinstance(other, str):
            try:
                return self._key() == parse(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"

    def __enter__(self) -> DeviceSpec:
        """``with fnn.device("cuda"):`` as PyTorch's device context: tensors and layers made
        in the block go to this device (this thread's default until the block ends, as
        ``with fnn.use(...)``); a missing backend raises here."""
        device = as_device(self)
        check_use(device)
        _stack().append(device)
        return self

    def __exit__(self, *exc) -> None:
        _stack().pop()


_cache: dict[str, Device] = {}  # every spelling seen -> its canonical Device
_canonical: dict[tuple, Device] = {}  # (backend, index) -> the one Device of that device
on_refresh(_cache.clear)
on_refresh(_canonical.clear)


def parsed_devices() -> list:
    """The Device objects parsed so far (the ones tensors hold)."""
    return list(_canonical.values())


def parse(spec: str) -> tuple[str, int]:
    """``"name"`` or ``"name:N"`` as (name, N), N = 0 by default; ValueError otherwise."""
    name, _, index = spec.partition(":")
    if index and not index.isdigit():
        raise ValueError(f"bad device string {spec!r}: expected 'name' or 'name:N'")
    return name, int(index) if index else 0


def current_accelerator() -> Device | None:
    """The accelerator as a device (``fastnn.accelerator``'s): the current default device
    when it is one (a usable backend whose arrays are not host memory), else the first
    usable accelerator backend by name; None when there is none."""
    default = get_device()
    if _accelerates(default.backend.record):
        return default
    for record in backends():
        if _accelerates(record):
            return as_device(record.name)
    return None


def _accelerates(record) -> bool:
    return record.available and not record.host_memory


def accelerator_index(index: int) -> str:
    """PyTorch's device given as an int (``x.to(0)``, ``model.to(rank)``): that index of
    the current accelerator, as ``"cuda:0"``."""
    if index < 0:
        raise ValueError(f"device: an int device is an accelerator index >= 0, got {index}")
    found = current_accelerator()
    if found is None:
        raise RuntimeError(f"device {index}: an int names an index of the accelerator (cuda, "
                           f"opencl, ...) and none is available here; use 'cpu'")
    return f"{found.type}:{index}"


def as_device(spec) -> Device:
    """Parse ``"name"`` or ``"name:N"`` (or pass a Device through; an int is that index of
    the accelerator, as PyTorch's)."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return get_device()
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = accelerator_index(spec)
    if isinstance(spec, DeviceSpec):
        spec = str(spec)
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string like 'cpu' or 'cuda:1', got {spec!r}")
    found = _cache.get(spec)
    if found is None:  # "opencl" and "opencl:0" are one device, so one object
        key = parse(spec)
        found = _canonical.get(key)
        if found is None:
            found = _canonical[key] = Device(*key)
        _cache[spec] = found
    return found


_default: list[Device] = []  # the process-wide default, set by a plain fnn.use(...)
class _Scoped(threading.local):
    """Per thread: the devices of the enclosing ``with fnn.use(...)`` blocks. The class
    default makes a thread's first read a plain lookup (getattr with a default raises and
    catches AttributeError inside, on every tensor a new thread creates)."""

    stack = None


_scoped = _Scoped()


def _stack() -> list:
    stack = _scoped.stack
    if stack is None:
        stack = _scoped.stack = []
    return stack


def reset_default() -> None:
    """Back to the start-up default (``FASTNN_DEVICE``, else ``cpu``) everywhere: the
    process-wide default and this thread's blocks."""
    _default.clear()
    _stack().clear()


def get_device() -> Device:
    """The current default device: the innermost ``with fnn.use(...)`` of this thread, else
    the process-wide one (``cpu`` unless a plain ``fnn.use(...)`` changed it)."""
    stack = _stack()
    if stack:
        return stack[-1]
    if not _default:
        _default.append(_startup())
    return _default[-1]


def _startup() -> Device:
    """The start-up default device: ``FASTNN_DEVICE``, else ``cpu``."""
    return as_device(os.environ.get("FASTNN_DEVICE") or "cpu")


_KEEP = object()


class use:
    """Set the default device.

    ``fallback="cpu"`` also makes the primitives that this device's backend lacks run on
    cpu, counted in ``fnn.fallback_stats()`` (see :mod:`fastnn.api.fallback`); ``None``
    turns that off again. The setting belongs to the backend, not to the block.

    ``fnn.use("opencl")`` changes the process-wide default. ``with fnn.use("opencl"):``
    changes it for the current thread only, until the block ends (as PyTorch's device
    context): other threads keep creating tensors where they did. A plain call inside
    such a block changes that block's device.

    The first use of a backend's device without a passing conformance certificate for
    this fastnn version and device warns once (:class:`UncertifiedBackendWarning`;
    ``FASTNN_STRICT=1``: a BackendError; ``FASTNN_TRUST=name``: silent); see
    :mod:`fastnn.api.certificates`.
    """

    def __init__(self, spec, fallback=_KEEP):
        self.device = as_device(spec)
        check_use(self.device)  # warns once without a passing conformance certificate
        if fallback is not _KEEP:  # the backend's setting, for the rest of the process
            set_fallback(self.device.backend.name, fallback)
        stack = _stack()
        if stack:  # inside a with-block of this thread: change that block's device
            self._undo = (stack, len(stack) - 1, stack[-1])
            stack[-1] = self.device
        else:
            previous = get_device()
            self._undo = (_default, 0, previous)
            _default[:] = [self.device]

    def __enter__(self) -> Device:
        # used as a context manager: scope the change to this thread instead
        target, index, previous = self._undo
        target[index] = previous
        _stack().append(self.device)
        return self.device

    def __exit__(self, *exc) -> None:
        _stack().pop()

    def __repr__(self) -> str:
        return f"fastnn.use({str(self.device)!r})"


def set_default_device(device) -> None:
    """PyTorch's ``set_default_device``: where new tensors go from now on (a plain
    ``fnn.use(device)``: the process-wide default, or the enclosing ``with fnn.use``
    block's); ``None`` puts back the start-up default (``FASTNN_DEVICE``, else ``cpu``)."""
    if device is None:
        _default.clear()
        stack = _stack()
        if stack:  # (in a with-block: that block's device, as a plain fnn.use sets it)
            stack[-1] = _startup()
        return
    use(device)


def get_default_device() -> Device:
    """PyTorch's ``get_default_device``: :func:`get_device`."""
    return get_device()
