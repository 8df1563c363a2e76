"""Sequential fuses a Linear and the activation layer after it into one bias_act hook for
PyTorch's activation classes (ReLU, GELU, ...), not only for Activation itself, with the
values and gradients of the layers called one by one; a subclass with its own forward,
and arguments the fused kind does not cover, are called as themselves."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.api.device import as_device

F64 = fnn.float64


@pytest.fixture
def hook_calls(monkeypatch):
    """Counts of the cpu backend's bias_act and activation hooks called."""
    ops = as_device("cpu").ops
    counts = {}
    for hook in ("bias_act", "relu", "gelu", "silu", "sigmoid", "tanh", "softplus",
                 "leaky_relu"):
        original = getattr(ops, hook)

        def counted(*args, _hook=hook, _original=original, **kwargs):
            counts[_hook] = counts.get(_hook, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(ops, hook, counted)
    return counts


def _one_by_one(model, x):
    for layer in model:
        x = layer(x)
    return x


def _values_and_grads(model, x, run):
    x = fnn.tensor(x, dtype=F64, requires_grad=True)
    out = run(model, x)
    (out * out).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy()]
    model.zero_grad()
    return out.detach().numpy(), grads


ACTIVATIONS = [
    (lambda: nn.ReLU(), "relu"), (lambda: nn.ReLU(inplace=True), "relu"),
    (lambda: nn.GELU(), "gelu"), (lambda: nn.SiLU(), "silu"), (lambda: nn.Sigmoid(), "sigmoid"),
    (lambda: nn.Tanh(), "tanh"), (lambda: nn.Softplus(), "softplus"),
    (lambda: nn.LeakyReLU(0.2), "leaky_relu"), (lambda: nn.Identity(), None),
]


@pytest.mark.parametrize("make, kind", ACTIVATIONS)
def test_pytorch_activation_classes_fuse_with_the_linear_before(make, kind, hook_calls):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7, dtype=F64), make(), nn.Linear(7, 3, dtype=F64))
    x = np.random.default_rng(0).normal(size=(4, 5)) * 3
    want = _values_and_grads(model, x, _one_by_one)
    got = _values_and_grads(model, x, lambda m, v: m(v))
    hook_calls.clear()
    _one_by_one(model, fnn.tensor(x, dtype=F64))
    assert hook_calls == ({"bias_act": 2, kind: 1} if kind else {"bias_act": 2}), hook_calls
    hook_calls.clear()
    model(fnn.tensor(x, dtype=F64))
    assert hook_calls == {"bias_act": 2}, hook_calls  # the activation inside the first
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-15)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


class _Doubled(nn.ReLU):
    def forward(self, x):
        return super().forward(x) * 2


class _Called(nn.ReLU):
    def __call__(self, x):
        return super().__call__(x) + 1


@pytest.mark.parametrize("make", [_Doubled, _Called, lambda: nn.GELU("tanh"),
                                  lambda: nn.Softplus(beta=2.0)],
                         ids=["own forward", "own call", "gelu tanh", "softplus beta"])
def test_layers_that_are_not_their_kind_are_called_as_themselves(make):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7, dtype=F64), make())
    assert model[1].fused_kind() is None
    x = np.random.default_rng(1).normal(size=(4, 5)) * 3
    want = _values_and_grads(model, x, _one_by_one)
    got = _values_and_grads(model, x, lambda m, v: m(v))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_the_fused_path_checks_the_input_dtype_as_the_layer_does():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with pytest.raises(TypeError, match="Linear: input is float64 but the layer's parameters "
                                        "are float32"):
        model(fnn.tensor(np.ones((2, 3))))

