"""Install throw-away backends through a real entry point (a .dist-info on sys.path)."""

from __future__ import annotations

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
