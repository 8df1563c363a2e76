"""Backend discovery and loading through the ``fastnn.backends`` entry-point group.

Backends are found by entry point only, loaded lazily on first use, validated
by pluggy against :mod:`fastnn.api.hookspec`, and resolved once into an
:class:`Ops` table whose attributes are the implementations themselves, so
the hot path pays no dispatch cost.
"""

from __future__ import annotations

import importlib
import inspect
import os
import threading
import types
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import entry_points

import pluggy

from fastnn.api import composite, fallback, hookspec
from fastnn.api.errors import BackendError

GROUP = "fastnn.backends"
_OPS = frozenset(hookspec.OPS)
# The backends in the fastnn repository and the argument of `pip install -e` that installs
# each in a checkout, with the extra a first install wants; the one place every install
# hint (here, `fastnn info`, the conformance report) takes them from. Any other backend is
# a package that registers an entry point in GROUP: nothing needs to be listed for it.
IN_TREE = {
    "cpu": "backends/cpu_numpy",
    "opencl": '"backends/opencl[pocl]"',  # PoCL: OpenCL on the host CPU, no driver needed
    "cuda": '"backends/cuda_cupy[cuda12]"',  # cupy for CUDA 12, which CUDA 13 drivers run
}


def install_hint(name: str) -> str:
    """How to install backend ``name``: the command for one of the repository's own,
    else how a third-party backend registers itself."""
    if name in IN_TREE:
        return f"pip install -e {IN_TREE[name]} in a checkout of the fastnn repository"
    own = ", ".join(f"{n} (pip install -e {arg})" for n, arg in IN_TREE.items())
    return (f"fastnn's own backends are {own}, from a checkout of the fastnn repository; "
            f"a third-party backend is a package that registers the entry point group "
            f"{GROUP!r}")


@dataclass
class BackendRecord:
    """What ``fnn.backends()`` reports about one installed backend."""

    name: str
    distribution: str
    version: str
    available: bool
    reason: str
    devices: list = field(default_factory=list)
    dtypes: list = field(default_factory=list)
    host_memory: bool = False  # arrays live in host RAM: host-side checks cost nothing
    # per device: its conformance certificate's status (fastnn.api.certificates), filled
    # in by backends()
    certificates: list = field(default_factory=list)
    distribution_version: str = "?"  # the installed distribution's (``version`` is the probe's)
    package_dir: str = ""  # the folder of the backend's entry-point module


class Ops:
    """A backend's resolved hook implementations, one attribute per hook name."""

    def __init__(self, backend_name: str):
        self._backend_name = backend_name

    def __repr__(self) -> str:
        return f"<Ops of backend {self._backend_name!r}>"


class Backend:
    """A loaded backend: its record and its resolved ops table."""

    def __init__(self, record: BackendRecord, ops: Ops | None):
        self.name = record.name
        self.record = record
        self.ops = ops
        self.implemented: set[str] = set()


_lock = threading.RLock()
_entry_points: dict | None = None
_loaded: dict[str, Backend] = {}
_on_refresh: list = []
_on_load: list = []


def _discover() -> dict:
    global _entry_points
    if _entry_points is None:
        _entry_points = {ep.name: ep for ep in entry_points(group=GROUP)}
    return _entry_points


def refresh() -> None:
    """Forget discovered entry points and loaded backends (after installing a backend).

    Parsed device strings go too, since each Device holds its backend's ops.
    """
    global _entry_points
    with _lock:
        _entry_points = None
        _loaded.clear()
        for forget in _on_refresh:
            forget()


def on_refresh(forget) -> None:
    """Call ``forget()`` at every :func:`refresh` (a cache above this module, such as the
    parsed devices, registers itself here instead of being imported from here)."""
    _on_refresh.append(forget)


def on_load(patch):
    """Call ``patch(backend)`` for each backend loaded from now on (shadow mode patches
    their hook tables); returns a function that stops it."""
    _on_load.append(patch)
    return lambda: _on_load.remove(patch) if patch in _on_load else None


def loaded() -> list:
    """The backends loaded so far (usable or not)."""
    return list(_loaded.values())


def hook_modules(module) -> list:
    """A backend's entry-point module and the modules it lists in ``fastnn_hook_modules``."""
    return [module] + [importlib.import_module(sub)
                       for sub in getattr(module, "fastnn_hook_modules", ())]


def hook_namespace(module) -> types.SimpleNamespace:
    """Every name of a backend's hook modules in one namespace (``ns.add(a, b)``), for code
    that calls one backend's hooks directly: its own composites, tests."""
    table = {}
    for mod in reversed(hook_modules(module)):  # the entry-point module's names win
        table.update(vars(mod))
    return types.SimpleNamespace(**table)


def _check_signatures(name: str, pm: pluggy.PluginManager) -> None:
    """Reject implementations whose parameters differ from the spec's, in name or order."""
    for hook_name in hookspec.HOOKS + ["backend_probe"]:
        spec_args = list(inspect.signature(getattr(hookspec, hook_name)).parameters)
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if list(impl.argnames) != spec_args:
                raise BackendError(
                    f"backend {name!r}: hook {hook_name!r} takes {list(impl.argnames)}, "
                    f"but the spec requires exactly {spec_args} in that order"
                )


def _build_ops(name: str, pm: pluggy.PluginManager) -> tuple[Ops, set[str]]:
    ops = Ops(name)
    implemented = set()
    for hook_name in hookspec.HOOKS:
        impls = getattr(pm.hook, hook_name).get_hookimpls()
        if impls:
            setattr(ops, hook_name, impls[-1].function)
            implemented.add(hook_name)
        elif hook_name in _OPS:
            setattr(ops, hook_name, partial(getattr(composite, hook_name), ops))
        else:
            setattr(ops, hook_name, fallback.missing(name, hook_name, get_backend))
    return ops, implemented


# PyTorch device types no fastnn backend provides, and what they are: no install helps
NOT_IN_FASTNN = {
    "meta": "PyTorch's device of shapes without data (the ensembling tutorial's stateless "
            "base model); fastnn has none: keep the module on a real device, "
            "fnn.func.functional_call replaces its parameters all the same",
}


def _load(name: str) -> Backend:
    eps = _discover()
    if name not in eps and name in NOT_IN_FASTNN:
        raise BackendError(f"device {name!r} is {NOT_IN_FASTNN[name]}")
    if name not in eps:
        installed = ", ".join(sorted(eps)) or "none"
        raise BackendError(f"unknown backend {name!r}; installed backends: {installed}. "
                           f"To install it: {install_hint(name)}")
    ep = eps[name]
    dist = getattr(ep, "dist", None)
    record = BackendRecord(
        name=name,
        distribution=dist.name if dist else "?",
        version=dist.version if dist else "?",
        available=False,
        reason="",
    )
    record.distribution_version = dist.version if dist else "?"
    try:
        module = ep.load()
        record.package_dir = os.path.dirname(getattr(module, "__file__", None) or "")
        pm = pluggy.PluginManager(hookspec.PROJECT)
        pm.add_hookspecs(hookspec)
        for mod in hook_modules(module):
            pm.register(mod, name=name if mod is module else f"{name}:{mod.__name__}")
        pm.check_pending()
        _check_signatures(name, pm)
        probe = pm.hook.backend_probe() or {}
    except Exception as exc:  # a broken plugin must not break fastnn
        record.reason = f"failed to load ({type(exc).__name__}: {exc})"
        return Backend(record, None)
    record.available = bool(probe.get("available", False))
    record.reason = probe.get("reason", "") or ("" if record.available else "unavailable")
    record.devices = list(probe.get("devices", []))
    record.dtypes = list(probe.get("dtypes", []))
    record.version = probe.get("version", record.version)
    record.host_memory = bool(probe.get("host_memory", False))
    if not record.available:
        return Backend(record, None)
    ops, implemented = _build_ops(name, pm)
    backend = Backend(record, ops)
    backend.implemented = implemented
    return backend


def get_backend(name: str, require: bool = True) -> Backend:
    """The loaded backend called ``name``; BackendError if unknown or (with require) unusable."""
    backend = _loaded.get(name)
    if backend is None:
        with _lock:
            backend = _loaded.get(name)
            if backend is None:
                backend = _load(name)
                _loaded[name] = backend
                for patch in list(_on_load):
                    patch(backend)
    if require and backend.ops is None:
        others = [n for n in _discover() if n != name]
        raise BackendError(
            f"backend {name!r} ({backend.record.distribution}) is installed but unusable: "
            f"{backend.record.reason}. Other installed backends: {', '.join(others) or 'none'}"
        )
    return backend


def record_of(name: str) -> BackendRecord | None:
    """The record of the installed backend called ``name`` (loading it to ask whether it
    is usable), or None when no backend of that name is installed."""
    if name not in _discover():
        return None
    return get_backend(name, require=False).record


def backends() -> list[BackendRecord]:
    """One record per installed backend (loading each to ask whether it is available),
    with each device's conformance certificate status in ``certificates``."""
    from fastnn.api.certificates import statuses

    records = [get_backend(name, require=False).record for name in sorted(_discover())]
    for record in records:
        record.certificates = statuses(record)
    return records
