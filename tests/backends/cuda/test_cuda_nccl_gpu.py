"""The NCCL collectives on a real GPU (one rank: NCCL refuses two ranks on one GPU).

Skips without a usable CUDA device. Checks that the hooks really go through
NCCL (a communicator is made and kept), that one rank's reductions are its
values, and that DistributedOptimizer on cuda steps as the wrapped optimizer.
Two ranks on one GPU are covered host-staged (FASTNN_NCCL=0) by the MPI tests
with the cuda backend, which benchmarks/gpu_check.sh runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastnn_cuda import collectives

import fastnn as fnn
from fastnn import distributed as dist
from fastnn import nn, optim
from tests.backends.cuda.gpu_common import cupy_or_skip

cp = cupy_or_skip()
pytestmark = pytest.mark.gpu


@pytest.fixture
def nccl():
    module = collectives.nccl_module()
    if module is None:
        pytest.skip("cupy finds no NCCL library here (pip install nvidia-nccl-cu12/13)")
    return module


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_one_rank_allreduce_through_nccl_returns_its_values(nccl, dtype):
    comm = dist.Communicator(None)
    host = [np.arange(12).reshape(3, 4).astype(dtype) - 5, np.array(7, dtype),
            np.zeros((0, 2), dtype)]
    arrays = [cp.asarray(h) for h in host]
    for reduction in ("sum", "max", "min"):
        out = collectives.allreduce(arrays, reduction, comm, 0)
        for got, want in zip(out, host):
            assert isinstance(got, cp.ndarray) and got.dtype == want.dtype
            np.testing.assert_array_equal(cp.asnumpy(got), want)
    (out,) = collectives.broadcast([arrays[0]], 0, comm, 0)
    np.testing.assert_array_equal(cp.asnumpy(out), host[0])
    assert (collectives.CACHE_KEY, 0) in comm.cache  # NCCL, not the host path


def test_distributed_optimizer_on_cuda_steps_as_the_wrapped_one(nccl):
    comm = dist.Communicator(None)
    x = fnn.tensor(np.random.default_rng(0).normal(size=(8, 5)), dtype=fnn.float64,
                   device="cuda")
    y = fnn.tensor(np.arange(8) % 3, device="cuda")
    weights = []
    for wrapped in (False, True):
        fnn.manual_seed(1)
        net = nn.Sequential(nn.Linear(5, 6, dtype=fnn.float64, device="cuda"),
                            nn.Activation("tanh"),
                            nn.Linear(6, 3, dtype=fnn.float64, device="cuda"))
        opt = optim.Adam(net.parameters(), lr=0.01)
        if wrapped:
            dist.broadcast_parameters(net, comm)
            opt = dist.DistributedOptimizer(opt, comm)
        for _ in range(3):
            opt.zero_grad()
            fnn.functional.cross_entropy(net(x), y).backward()
            opt.step()
        weights.append(net.state_dict())
    for name, want in weights[0].items():
        np.testing.assert_allclose(weights[1][name], want, rtol=0, atol=1e-12, err_msg=name)
    assert comm.stats.calls == 1 + 3
