"""Install throw-away backends through a real entry point (a .dist-info on sys.path)."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from pathlib import Path

from fastnn.api import device, registry


def install_backend(root: Path, dist: str, name: str, module: str, source: str) -> None:
    """Write ``module.py`` and a ``dist.dist-info`` registering ``name`` under root, then
    put root on sys.path and make fastnn rediscover its backends."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[fastnn.backends]\n{name} = {module}\n")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    forget()


def forget() -> None:
    """Make fastnn rediscover entry points and start again from the default device."""
    registry.refresh()
    device.reset_default()


@contextlib.contextmanager
def registry_kept():
    """Put the loaded backends and the parsed Device objects back as they were on the way
    out, whatever the block forgot or installed. A tensor holds its Device object, so a
    test that refreshed the registry would otherwise leave the tensors that other test
    modules made at import on devices no new tensor matches ("expected all tensors on one
    device, found cpu and cpu")."""
    kept = (registry._entry_points, dict(registry._loaded), dict(device._cache),
            dict(device._canonical), list(device._default))
    try:
        yield
    finally:
        with registry._lock:
            registry._entry_points = kept[0]
            for now, then in zip((registry._loaded, device._cache, device._canonical,
                                  device._default), kept[1:]):
                if now != then:
                    now.clear()
                    now.update(then) if isinstance(now, dict) else now.extend(then)


# A second host backend: the NumPy hooks re-registered under another name,
# so that tests can mix two devices without a GPU.
CPU_CLONE = """
from fastnn_cpu import *  # noqa: F401,F403
from fastnn_cpu.conv import *  # noqa: F401,F403
from fastnn_cpu.fused import *  # noqa: F401,F403
from fastnn_cpu import backend_probe as _probe
from fastnn.api.hookspec import hookimpl

@hookimpl
def backend_probe():
    info = dict(_probe())
    info["devices"] = ["clone 0", "clone 1"]
    return info
"""
