"""A torch.func script (per-sample gradients, a MAML-style step through grad, a jacrev)
runs on fastnn with only its imports changed, and gives PyTorch's numbers."""

import sys

import numpy as np
import pytest

SCRIPT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, jacrev, vmap


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def run(weights, data, labels):
    model = Net()
    model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.tensor(data), torch.tensor(labels)

    def compute_loss(params, sample, target):
        predictions = functional_call(model, params, (sample.unsqueeze(0),))
        return F.cross_entropy(predictions, target.unsqueeze(0))

    per_sample = vmap(grad(compute_loss), in_dims=(None, 0, 0))(params, x, y)

    def task_loss(p, inputs, targets):
        return F.cross_entropy(functional_call(model, p, (inputs,)), targets)

    def meta_loss(p):  # one inner SGD step, then the loss on held-out samples
        g = grad(task_loss)(p, x[:4], y[:4])
        fast = {k: p[k] - 0.5 * g[k] for k in p}
        return task_loss(fast, x[4:], y[4:])

    meta = grad(meta_loss)(params)
    jac = jacrev(lambda inp: model(inp).softmax(-1))(x[0])
    as_np = lambda d: {k: v.detach().numpy() for k, v in d.items()}  # noqa: E731
    return as_np(per_sample), as_np(meta), jac.detach().numpy()
'''


def _run(source, *args):
    namespace = {}
    exec(compile(source, "<torch.func script>", "exec"), namespace)
    return namespace["run"](*args)


def test_a_torch_func_script_runs_unchanged_and_follows_pytorch(monkeypatch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = rng.normal(size=(8, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 8)
    torch.manual_seed(0)
    namespace = {}
    exec(compile(SCRIPT, "<torch.func script>", "exec"), namespace)
    weights = {k: v.numpy().copy() for k, v in namespace["Net"]().state_dict().items()}
    theirs = namespace["run"](weights, data, labels)

    import fastnn.nn.functional

    import fastnn
    import fastnn.func

    for name, module in {"torch": fastnn, "torch.nn": fastnn.nn,
                         "torch.nn.functional": fastnn.nn.functional,
                         "torch.func": fastnn.func}.items():
        monkeypatch.setitem(sys.modules, name, module)
    ours = _run(SCRIPT, weights, data, labels)
    for mine, want in zip(ours[:2], theirs[:2]):
        assert set(mine) == set(want)
        for k in want:
            np.testing.assert_allclose(mine[k], want[k], rtol=1e-4, atol=1e-6, err_msg=k)
    assert ours[0]["fc1.weight"].shape == (8, 8, 4)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-4, atol=1e-6)
