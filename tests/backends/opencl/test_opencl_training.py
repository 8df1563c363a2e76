"""A small MLP and a small Conv1d network train on opencl along the same loss curve as on cpu."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim


def _train(model_fn, x, y, device, make_opt, steps=12):
    fnn.manual_seed(3)
    model = model_fn().to(device)
    opt = make_opt(model.parameters())
    xt, yt = fnn.tensor(x, device=device), fnn.tensor(y, device=device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), {k: v for k, v in model.state_dict().items()}


class ConvNet(nn.Module):
    """Conv1d -> ReLU -> Conv1d (stride 2) -> mean over length -> Linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 8, 5, padding=2)
        self.conv2 = nn.Conv1d(8, 8, 3, stride=2, dilation=2)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.head(h.mean(axis=2))


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.Activation("relu"), nn.Linear(32, 32),
                         nn.Activation("tanh"), nn.Linear(32, 4))


OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
}


@pytest.mark.parametrize("opt", OPTIMIZERS)
def test_mlp_trains_like_cpu(ocl, opt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 20)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] > 0)
    cpu_losses, cpu_state = _train(_mlp, x, y, "cpu", OPTIMIZERS[opt])
    ocl_losses, ocl_state = _train(_mlp, x, y, "opencl", OPTIMIZERS[opt])
    assert cpu_losses[-1] < 0.8 * cpu_losses[0]  # it does train
    np.testing.assert_allclose(ocl_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    for name, value in cpu_state.items():
        np.testing.assert_allclose(ocl_state[name], value, rtol=1e-3, atol=1e-4, err_msg=name)


def test_conv1d_net_trains_like_cpu(ocl):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 3, 24)).astype(np.float32)
    y = (x[:, 0, :12].mean(axis=1) > 0).astype(np.int64) + (x[:, 1].std(axis=1) > 1.0)
    cpu_losses, _ = _train(ConvNet, x, y, "cpu", OPTIMIZERS["sgd"])
    ocl_losses, _ = _train(ConvNet, x, y, "opencl", OPTIMIZERS["sgd"])
    assert cpu_losses[-1] < cpu_losses[0]
    np.testing.assert_allclose(ocl_losses, cpu_losses, rtol=1e-4, atol=1e-5)


def test_training_loop_reuses_pooled_buffers(ocl):
    """After a warm-up step, further steps allocate no new device memory."""
    from fastnn_opencl.runtime import state

    rng = np.random.default_rng(2)
    x = fnn.tensor(rng.standard_normal((32, 20)).astype(np.float32), device="opencl")
    y = fnn.tensor(rng.integers(0, 4, 32), device="opencl")
    fnn.manual_seed(0)
    model = _mlp().to("opencl")
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    pool = state(0).pool

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(2):
        step()
    managed = pool.managed_bytes
    for _ in range(5):
        step()
    assert pool.managed_bytes == managed
