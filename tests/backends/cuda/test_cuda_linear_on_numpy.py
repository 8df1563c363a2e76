"""The CUDA backend's linear and linear_grad_weight hooks, run with NumPy standing in for
cupy, through the conformance suite's own check of both hooks on strided layouts (a
transposed or sliced x, a broadcast grad, empty leading axes, widths past 256)."""

from __future__ import annotations

import types

import numpy as np
import pytest
from fastnn_cuda import gemm, indexing, primitives

from fastnn.conformance import cases_linear
from fastnn.conformance.compare import Mismatch
from tests.backends.cuda.cupy_standin import CupyStandIn


@pytest.fixture
def device(monkeypatch):
    """A device whose linear hooks are the cuda backend's, on NumPy; the hooks the check
    only uses to lay its inputs out are NumPy's own."""
    for module in (primitives, indexing):
        monkeypatch.setattr(module, "cp", CupyStandIn())
    monkeypatch.setattr(gemm, "enabled", lambda: False)  # (cupy.matmul: the stand-in's)
    ops = types.SimpleNamespace(
        from_numpy=lambda array, index: np.array(array, copy=True), to_numpy=np.array,
        transpose=np.transpose, reshape=np.reshape, broadcast_to=np.broadcast_to,
        slice=indexing.slice, linear=primitives.linear,
        linear_grad_weight=primitives.linear_grad_weight)
    return types.SimpleNamespace(ops=ops, index=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_hooks_pass_the_conformance_check(device, dtype):
    cases_linear._check_layouts(device, dtype, np.random.default_rng(0))


def test_the_check_fails_a_weight_gradient_that_drops_leading_axes(device):
    right = device.ops.linear_grad_weight
    device.ops.linear_grad_weight = lambda x, grad: (
        right(x[0], grad[0]) if x.ndim > 2 else right(x, grad))
    with pytest.raises(Mismatch, match="linear_grad_weight"):
        cases_linear._check_layouts(device, "float32", np.random.default_rng(0))
