"""What the OpenCL hook tests share: the NumPy reference, tolerances and two helpers."""

import fastnn_cpu
import numpy as np

from fastnn.api import registry

cpu = registry.hook_namespace(fastnn_cpu)  # the reference: every NumPy hook

TOL = {"float32": dict(rtol=3e-5, atol=3e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
DTYPES = ["float32", "float64"]


def up(ocl, array, transposed=False):
    """Copy to the device; ``transposed`` gives a non-contiguous view with the same values."""
    if transposed and array.ndim >= 2:
        t = ocl.from_numpy(np.ascontiguousarray(array.T), 0)
        return ocl.transpose(t, tuple(reversed(range(array.ndim))))
    return ocl.from_numpy(array, 0)


def check(ocl, got, want, dtype):
    got = ocl.to_numpy(got)
    assert got.shape == np.shape(want)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, **TOL.get(dtype, dict(rtol=0, atol=0)))
