"""relu(-0.0) is -0.0, as PyTorch's (its max keeps x on a tie with the zero), on every
path of the cpu backend: the hook (small, row-wise and strided inputs), the fused
bias + relu, and a captured program writing into its kept buffers. (float16's maximum
keeps its first operand on a tie, so there relu(-0.0) stays +0.0.)"""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")


def _signs(a):
    return np.signbit(np.asarray(a))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5,), (64, 300), (3, 40, 40)])
def test_relu_keeps_negative_zero(dtype, shape):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    x.reshape(-1)[::3] = -0.0
    x.reshape(-1)[1::7] = np.nan
    want = torch.relu(torch.tensor(x)).numpy()
    for data in (x, x.T):  # contiguous and strided
        got = F.relu(fnn.tensor(data)).numpy()
        ref = want if data is x else torch.relu(torch.tensor(data)).numpy()
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(_signs(got), _signs(ref))


def test_fused_bias_relu_keeps_negative_zero():
    from fastnn_cpu.fused import bias_act

    x = np.array([[-0.0, 0.0, -1.0, 1.0], [-0.0, -0.0, 3.0, -0.0]], np.float32)
    bias = np.array([-0.0, -0.0, 0.5, -0.0], np.float32)
    got = bias_act(x, bias, "relu", 0.0)
    want = torch.relu(torch.tensor(x) + torch.tensor(bias)).numpy()
    np.testing.assert_array_equal(_signs(got), _signs(want))


def test_captured_relu_in_kept_buffers_keeps_negative_zero():
    x = np.random.default_rng(1).normal(size=(64, 1024)).astype(np.float32)  # 256 KiB
    x[:, ::5] = -0.0
    step = fnn.compile(lambda t: F.relu(t * 1.0))
    want = _signs(torch.relu(torch.tensor(x)).numpy())
    for _ in range(3):  # (recorded, then replayed into its buffers)
        np.testing.assert_array_equal(_signs(step(fnn.tensor(x)).numpy()), want)
