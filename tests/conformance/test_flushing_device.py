"""A device whose comparisons flush subnormals to zero (cupy compiles every kernel with
``-ftz=true``) still conforms on ``relu_backward`` when its own hook keeps subnormals, as
PyTorch does; a hook that flushes them fails."""

from __future__ import annotations

import types

import numpy as np
import pytest

from fastnn.api.device import as_device
from fastnn.conformance import cases_gelu


def _flushed(v):
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        return np.where(np.abs(v) < np.finfo(v.dtype).tiny, np.zeros((), v.dtype), v)
    return v


class _FlushingOps:
    """The NumPy backend's hooks, with comparisons that see a subnormal as zero."""

    def __init__(self, ops, hook_flushes: bool):
        self._ops, self._hook_flushes = ops, hook_flushes

    def __getattr__(self, name):
        return getattr(self._ops, name)

    def equal(self, a, b):
        return self._ops.equal(_flushed(a), _flushed(b))

    def relu_backward(self, out, grad):
        return self._ops.relu_backward(_flushed(out) if self._hook_flushes else out, grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_on_a_device_that_flushes_subnormals(dtype):
    cpu = as_device("cpu")
    device = types.SimpleNamespace(ops=_FlushingOps(cpu.ops, False), index=cpu.index)
    cases_gelu._check_relu_backward(device, dtype, np.random.default_rng(0))
    device.ops = _FlushingOps(cpu.ops, True)
    with pytest.raises(AssertionError, match="relu_backward"):
        cases_gelu._check_relu_backward(device, dtype, np.random.default_rng(0))
