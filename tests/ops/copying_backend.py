"""The "copying" backend of the view and in-place tests: the cpu backend's hooks with every
view hook returning a copy and no ``assign``, so that the core's write-back composite keeps
views right (tests/ops/conftest.py installs it for the ``dev`` fixture)."""

from __future__ import annotations

COPYING = """
from fastnn_cpu import *  # noqa: F401,F403
from fastnn_cpu.conv import *  # noqa: F401,F403
from fastnn_cpu.conv_2d import *  # noqa: F401,F403
from fastnn_cpu.fused import *  # noqa: F401,F403
from fastnn_cpu.indexing import *  # noqa: F401,F403
from fastnn_cpu.optim import *  # noqa: F401,F403
from fastnn_cpu.reduce import *  # noqa: F401,F403
from fastnn_cpu import backend_probe as _probe
import fastnn_cpu.indexing as _ix
import numpy as _np
from fastnn.api.hookspec import hookimpl

del assign  # contiguous arrays only: the core must write back itself
fastnn_hook_modules = []


@hookimpl
def backend_probe():
    info = dict(_probe())
    info["devices"] = ["copying host"]
    return info


@hookimpl
def slice(x, starts, stops, steps):
    return _np.array(_ix.slice(x, starts, stops, steps), copy=True)


@hookimpl
def reshape(x, shape):
    return _np.array(_np.reshape(x, shape), copy=True)


@hookimpl
def transpose(x, axes):
    return _np.ascontiguousarray(_np.transpose(x, axes)).copy()


@hookimpl
def broadcast_to(x, shape):
    return _np.array(_np.broadcast_to(x, shape), copy=True)
"""
