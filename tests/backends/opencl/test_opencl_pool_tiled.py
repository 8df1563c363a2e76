"""The one-launch max pooling backward of windows that tile the input (stride = kernel,
no padding or dilation) against the NumPy float64 reference of the conformance cases:
rows and columns past the last window, ties after a ReLU, a NaN window, a non-contiguous
input, float32 and float64."""

import numpy as np
import pytest

# (x shape, kernel): remainders in both directions, a 1-row kernel, a whole-plane window
CASES = [((2, 3, 9, 11), (2, 2)), ((1, 2, 7, 8), (3, 2)), ((3, 1, 4, 10), (1, 3)),
         ((2, 2, 5, 5), (5, 5))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiled_max_pool_backward_matches_numpy(ocl, dtype):
    from fastnn_opencl import pooling
    from fastnn_opencl.misc import from_numpy, to_numpy, transpose
    from fastnn_opencl.runtime import state

    from fastnn.conformance.cases_pool import max_pool2d_grad_ref, max_pool2d_ref

    if dtype == "float64" and not state(0).fp64:
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(3)
    for shape, kernel in CASES:
        x = np.maximum(np.round(rng.standard_normal(shape), 1), 0.0)  # ties: zeros, repeats
        x[0, 0, 0, 0] = np.nan
        x = x.astype(dtype).astype(np.float64)
        sizes = (shape[2] // kernel[0], shape[3] // kernel[1])
        geometry = pooling._geometry(shape, shape[:2] + sizes, kernel, kernel, (0, 0), (1, 1))
        assert pooling._tiles(geometry), shape
        dx = transpose(from_numpy(np.ascontiguousarray(x.transpose(0, 1, 3, 2)).astype(dtype),
                                  0), (0, 1, 3, 2))
        out = pooling.max_pool2d(dx, kernel, kernel, (0, 0), (1, 1), sizes)
        np.testing.assert_array_equal(to_numpy(out), max_pool2d_ref(x, kernel).astype(dtype))
        g = rng.standard_normal(shape[:2] + sizes)
        got = to_numpy(pooling.max_pool2d_backward(dx, out, from_numpy(g.astype(dtype), 0),
                                                   kernel, kernel, (0, 0), (1, 1)))
        (want,) = max_pool2d_grad_ref(x, kernel, grad_out=g)
        tol = 1e-6 if dtype == "float32" else 1e-14
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(shape))
