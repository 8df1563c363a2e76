"""The direct stride-1 conv2d kernel (CPU devices) and its use for the input gradient,
against the cpu backend's hooks: groups, dilation, asymmetric padding, widths that are
no multiple of the vector width, an input with no unit stride along its width."""

import numpy as np
import pytest

CASES = [  # (x shape, weight shape, padding, dilation, groups)
    ((2, 4, 7, 11), (6, 2, 3, 3), ((1, 1), (1, 1)), (1, 1), 2),
    ((1, 3, 9, 5), (4, 3, 2, 3), ((1, 0), (2, 1)), (2, 1), 1),
    ((3, 2, 6, 19), (5, 2, 1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 3, 8, 8), (3, 1, 3, 2), ((0, 2), (1, 0)), (1, 3), 3),
]


@pytest.mark.parametrize("transposed_input", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_direct_conv2d_matches_the_cpu_backend(ocl, case, transposed_input):
    import fastnn_cpu.conv_2d as cpu
    from fastnn_opencl.misc import from_numpy, to_numpy, transpose

    x_shape, w_shape, padding, dilation, groups = case
    rng = np.random.default_rng(len(x_shape) + w_shape[2])
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    stride = (1, 1)
    if transposed_input:  # the same values through a view with strides (.., 1, W)
        dx_in = transpose(from_numpy(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), 0),
                          (0, 1, 3, 2))
    else:
        dx_in = from_numpy(x, 0)
    out = ocl.conv2d(dx_in, from_numpy(w, 0), stride, padding, dilation, groups)
    want = cpu.conv2d(x, w, stride, padding, dilation, groups)
    np.testing.assert_allclose(to_numpy(out), want, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(want.shape).astype(np.float32)
    got = ocl.conv2d_grad_input(from_numpy(g, 0), from_numpy(w, 0), x_shape[2:], stride,
                                padding, dilation, groups)
    want = cpu.conv2d_grad_input(g, w, x_shape[2:], stride, padding, dilation, groups)
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5, atol=1e-5)
