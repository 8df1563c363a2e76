"""What the CUDA GPU tests share: tolerances, dtypes, inputs and the comparison."""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import _cupy

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-11, atol=1e-13)}
DTYPES = ["float32", "float64"]


def cupy_or_skip():
    """cupy, or a skip of the calling test module (with cupy's reason) where no usable
    CUDA device exists; call it at module level."""
    probe = _cupy.probe()
    if not probe["available"]:
        pytest.skip(f"no CUDA GPU: {probe['reason']}", allow_module_level=True)
    return _cupy.cupy


def rand(shape, dtype="float64", seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def close(got, want, dtype):
    np.testing.assert_allclose(_cupy.cupy.asnumpy(got), want, **TOL[dtype])
