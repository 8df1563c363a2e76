"""fastnn.nn.utils.prune as PyTorch's torch.nn.utils.prune: the weight_orig/weight_mask
reparametrization, the masks of each method (alone and combined), gradients, remove."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.nn.utils import prune

try:
    import torch
    import torch.nn.utils.prune
except ImportError:  # pragma: no cover - the NumPy references below hold without it
    torch = None

RNG = np.random.default_rng(0)
WEIGHTS = {"conv.weight": RNG.standard_normal((6, 4, 3, 3)), "conv.bias": RNG.standard_normal(6),
           "fc.weight": RNG.standard_normal((5, 24)), "fc.bias": RNG.standard_normal(5)}
X = RNG.standard_normal((2, 4, 4, 4))


def _model(lib):
    """A conv and a linear layer of ``lib`` (fastnn or torch), float64, from WEIGHTS."""
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(4, 6, 3)
            self.fc = lib.nn.Linear(24, 5)

        def forward(self, x):
            return self.fc(self.conv(x).relu().flatten(1))

    net = Net().double()
    net.load_state_dict({k: lib.tensor(v) for k, v in WEIGHTS.items()})
    return net


def _script(lib, net):
    """The pruning tutorial's steps; what each leaves behind, as NumPy."""
    P = lib.nn.utils.prune
    found = {}
    P.l1_unstructured(net.conv, name="weight", amount=0.3)
    P.l1_unstructured(net.conv, name="bias", amount=2)
    found["keys"] = sorted(net.state_dict())
    found["params"] = sorted(n for n, _ in net.conv.named_parameters())
    P.ln_structured(net.conv, name="weight", amount=0.5, n=2, dim=0)
    P.ln_structured(net.conv, name="weight", amount=1, n=1, dim=1)
    P.l1_unstructured(net.conv, name="weight", amount=0.4)  # among the entries left
    found["hooks"] = [type(h).__name__ for h in net.conv._forward_pre_hooks.values()]
    P.global_unstructured([(net.conv, "bias"), (net.fc, "weight")],
                          pruning_method=P.L1Unstructured, amount=0.25)
    for name in ("conv.weight_mask", "conv.bias_mask", "fc.weight_mask"):
        found[name] = np.asarray(net.state_dict()[name])
    out = net(lib.tensor(X))
    (out ** 2).sum().backward()
    found["out"] = out.detach().numpy()
    found["grad"] = net.conv.weight_orig.grad.numpy()
    P.remove(net.conv, "weight")
    found["removed"] = [sorted(net.conv.state_dict()), isinstance(net.conv.weight,
                                                                   lib.nn.Parameter)]
    found["weight"] = net.conv.weight.detach().numpy()
    found["pruned"] = [P.is_pruned(net), P.is_pruned(net.conv), P.is_pruned(net.fc)]
    return found


def test_the_pruning_tutorial_follows_pytorch():
    ours = _script(fnn, _model(fnn))
    conv_mask = ours["conv.weight_mask"]
    # each output channel kept by ln_structured (3 of 6, and one input channel dropped)
    assert (conv_mask.reshape(6, -1).sum(1) == 0).sum() == 3
    assert ours["keys"] == ["conv.bias_mask", "conv.bias_orig", "conv.weight_mask",
                            "conv.weight_orig", "fc.bias", "fc.weight"]
    assert ours["params"] == ["bias_orig", "weight_orig"]
    assert ours["hooks"] == ["L1Unstructured", "PruningContainer"]  # bias, then weight
    assert ours["removed"] == [["bias_mask", "bias_orig", "weight"], True]
    assert ours["pruned"] == [True, True, True]
    np.testing.assert_array_equal(ours["grad"] == 0, conv_mask == 0)  # pruned: no gradient
    if torch is not None:
        theirs = _script(torch, _model(torch))
        for key, want in theirs.items():
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(ours[key], want, rtol=1e-12, atol=1e-12, err_msg=key)
            else:
                assert ours[key] == want, key


def test_l1_unstructured_prunes_the_smallest_magnitudes():
    layer = nn.Linear(6, 4, dtype=fnn.float64)
    w = layer.weight.detach().numpy().copy()
    prune.l1_unstructured(layer, "weight", amount=0.25)  # round(0.25 * 24) = 6
    want = np.ones(24)
    want[np.argsort(np.abs(w).ravel())[:6]] = 0
    np.testing.assert_array_equal(layer.weight_mask.numpy().ravel(), want)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), w * want.reshape(4, 6))
    assert isinstance(layer.weight_orig, nn.Parameter)
    assert not isinstance(layer.weight, nn.Parameter)


def test_a_pruned_layer_trains_only_its_unpruned_entries():
    layer = nn.Linear(6, 4, dtype=fnn.float64)
    prune.random_unstructured(layer, "weight", amount=10)
    assert int((layer.weight_mask == 0).sum()) == 10
    opt = fnn.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        (layer(fnn.tensor(X.reshape(-1, 4)[:, :3].repeat(2, 1))) ** 2).sum().backward()
        opt.step()
        pruned = layer.weight_mask.numpy() == 0
        assert (layer.weight.detach().numpy()[pruned] == 0).all()  # recomputed each forward


@pytest.mark.parametrize("call, error", [
    (lambda m: prune.l1_unstructured(m, "weight", amount=-1), ValueError),
    (lambda m: prune.l1_unstructured(m, "weight", amount=1.5), ValueError),
    (lambda m: prune.l1_unstructured(m, "weight", amount=100), ValueError),
    (lambda m: prune.l1_unstructured(m, "weight", amount="half"), TypeError),
    (lambda m: prune.ln_structured(m, "bias", amount=1, n=2, dim=0), ValueError),
    (lambda m: prune.remove(m, "weight"), ValueError),
    (lambda m: prune.global_unstructured([(m, "weight")], pruning_method=prune.LnStructured,
                                         amount=1, n=2, dim=0), TypeError),
])
def test_bad_pruning_raises_and_leaves_the_layer_as_it_was(call, error):
    layer = nn.Linear(6, 4)
    with pytest.raises(error):
        call(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"]
    assert not prune.is_pruned(layer)
