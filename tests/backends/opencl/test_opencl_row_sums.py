"""Long rows of float32: softmax, log-softmax, cross-entropy and rms_div sum a row in one
work-item, in double on CPU devices (as reduce.cl's sums). Summed in float32, a row of
200,000 was off by ~1e-5 relative (rms_div by 2.6e-4 at a million)."""

import numpy as np
import pytest
from fastnn_opencl import runtime

import fastnn as fnn
import fastnn.functional as F

N_COLS = 200_000


@pytest.fixture
def cpu_device(ocl):
    if not runtime.state(0).is_cpu:
        pytest.skip("GPUs accumulate row sums in float32; this checks the CPU devices' double")


def test_long_rows_match_float64(cpu_device):
    rng = np.random.default_rng(0)
    host = rng.standard_normal((2, N_COLS)).astype(np.float32)
    wide = host.astype(np.float64)
    e = np.exp(wide - wide.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    with fnn.use("opencl"):
        x = fnn.tensor(host)
        targets = fnn.tensor(np.array([3, 7]))
        got = {"softmax": F.softmax(x, -1).numpy(), "log_softmax": F.log_softmax(x, -1).numpy(),
               "rms_div": F.rms_div(x).numpy(),
               "cross_entropy": F.cross_entropy(x, targets, reduction="none").numpy()}
    want = {"softmax": probs, "log_softmax": np.log(probs),
            "rms_div": wide / np.sqrt((wide**2).mean(axis=1, keepdims=True) + 1e-6),
            "cross_entropy": -np.log(probs[[0, 1], [3, 7]])}
    for name, value in got.items():
        np.testing.assert_allclose(value, want[name], rtol=2e-6, atol=0, err_msg=name)
