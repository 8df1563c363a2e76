"""Activation functions and classes, GLU, GatedLinear, DyT, ModuleList/ModuleDict and the
Module conveniences (deepcopy, requires_grad_, named_modules, repr): against NumPy float64
references, and against PyTorch where it is installed."""

import copy
import math

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.nn.torch_compare import compare, devices

rng = np.random.default_rng(5)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805
_erf = np.vectorize(math.erf)


def _softplus(x):
    return np.logaddexp(0.0, x)


REFERENCES = {
    "elu": (lambda x: F.elu(x, alpha=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "selu": (F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x))),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "glu": (F.glu, lambda x: x[..., :3] / (1 + np.exp(-x[..., 3:]))),
    "glu_dim0": (lambda x: F.glu(x, 0), lambda x: x[:2] / (1 + np.exp(-x[2:]))),
}


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("name", list(REFERENCES))
def test_activation_functions_match_numpy_and_finite_differences(name, device):
    op, ref = REFERENCES[name]
    x = rng.uniform(0.1, 2.5, (4, 6)) * rng.choice([-1, 1], (4, 6))
    t = fnn.tensor(x, device=device, requires_grad=True)
    out = op(t)
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-12, atol=1e-14)
    g = rng.standard_normal(out.shape)
    out.backward(fnn.tensor(g, device=device))
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        fd[i] = ((ref(up) - ref(down)) * g).sum() / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_elu_gradient_is_finite_for_huge_inputs():
    t = fnn.tensor(np.array([-1000.0, 1000.0]), requires_grad=True)
    F.elu(t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0.0, 1.0])


def test_new_activation_kinds_are_registered():
    from fastnn.ops.activations import ACTIVATIONS

    assert {"elu", "selu", "mish"} <= set(ACTIVATIONS)
    x = fnn.tensor(np.array([-1.0, 0.5]), dtype=fnn.float64)
    np.testing.assert_allclose(nn.Activation("mish")(x).numpy(),
                               REFERENCES["mish"][1](x.numpy()))
    if hasattr(F, "sin"):  # sin and cos are tensor ops of issue 13
        assert {"sin", "cos"} <= set(ACTIVATIONS)
        np.testing.assert_allclose(nn.Activation("sin")(x).numpy(), np.sin(x.numpy()))


def test_dyt_and_gated_linear_match_numpy():
    x = rng.standard_normal((3, 4))
    dyt = nn.DyT(4, alpha_init=0.8, dtype=fnn.float64)
    assert dyt.alpha.shape == (1,) and dyt.alpha.param_class == "other"
    assert dyt.weight.param_class == "connective" and dyt.bias.param_class == "bias"
    np.testing.assert_allclose(dyt(fnn.tensor(x)).numpy(), np.tanh(0.8 * x), rtol=1e-12)
    for gate, fn in (("sigmoid", lambda z: 1 / (1 + np.exp(-z))), ("tanh", np.tanh),
                     ("silu", lambda z: z / (1 + np.exp(-z)))):
        layer = nn.GatedLinear(4, 2, gate=gate, dtype=fnn.float64)
        assert list(layer.state_dict()) == ["value.weight", "value.bias", "gate.weight",
                                            "gate.bias"]
        w = layer.state_dict()
        want = (x @ w["value.weight"].T + w["value.bias"]) * fn(x @ w["gate.weight"].T
                                                                 + w["gate.bias"])
        np.testing.assert_allclose(layer(fnn.tensor(x)).numpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="gate must be one of"):
        nn.GatedLinear(4, 2, gate="relu")


def test_module_list_and_dict_register_their_modules():
    layers = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 1)])
    layers.append(nn.ReLU())
    assert len(layers) == 3 and isinstance(layers[-1], nn.ReLU)
    assert list(layers.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert isinstance(layers[:2], nn.ModuleList) and len(layers[:2]) == 2
    layers.insert(0, nn.Identity())
    assert list(layers.state_dict())[0] == "1.weight"
    del layers[0]
    assert list(layers.state_dict())[0] == "0.weight"
    blocks = nn.ModuleDict({"enc": nn.Linear(2, 2), "head": nn.Linear(2, 1)})
    assert list(blocks.state_dict()) == ["enc.weight", "enc.bias", "head.weight", "head.bias"]
    assert "enc" in blocks and list(blocks.keys()) == ["enc", "head"]
    blocks.pop("enc")
    assert list(blocks) == ["head"]
    with pytest.raises(TypeError, match="not a fastnn Module"):
        layers.append(3)
    with pytest.raises(NotImplementedError, match="ModuleList has no forward"):
        layers(fnn.randn((1, 2)))


def test_deepcopy_requires_grad_named_modules_and_repr():
    model = nn.Sequential(nn.Linear(2, 3), nn.GELU("tanh"), nn.GRU(3, 2))
    twin = copy.deepcopy(model)
    for (_, a), (_, b) in zip(model.named_parameters(), twin.named_parameters()):
        assert a is not b and a.param_class == b.param_class
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    before = model[0].weight.numpy().copy()
    twin[0].load_state_dict({"weight": np.zeros((3, 2)), "bias": np.zeros(3)})
    np.testing.assert_array_equal(model[0].weight.numpy(), before)  # independent copies
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    assert all(p.requires_grad for p in twin.parameters())
    assert [n for n, _ in model.named_modules()] == ["", "0", "1", "2"]
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.MultiheadAttention(4, 2)) == (
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=4, "
        "out_features=4, bias=True)\n)")
    assert repr(nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.1))) == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): Dropout(p=0.1, inplace=False)\n)")
    assert repr(nn.LayerNorm(8)) == "LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LSTM(3, 4, num_layers=2)) == "LSTM(3, 4, num_layers=2)"


TORCH_CLASSES = ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "Softplus", "ELU",
                 "SELU", "Mish", "Identity", "Hardtanh", "LogSoftmax", "GLU"]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", TORCH_CLASSES)
def test_activation_classes_match_torch(name, dtype, device):
    torch = pytest.importorskip("torch")
    kwargs = {"LeakyReLU": {"negative_slope": 0.2}, "ELU": {"alpha": 0.5},
              "Softplus": {"beta": 2.0}, "Hardtanh": {"min_val": -0.5, "max_val": 1.5},
              "GELU": {"approximate": "tanh"}, "LogSoftmax": {"dim": 1}}.get(name, {})
    x = rng.uniform(0.1, 2.5, (3, 4)) * rng.choice([-1, 1], (3, 4))
    compare(getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), [x], dtype, device)


def test_dyt_gradients_match_torch_composition():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4))
    dyt = nn.DyT(4, dtype=fnn.float64)
    xt = fnn.tensor(x, requires_grad=True)
    dyt(xt).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    alpha = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    (torch.tanh(alpha * tx) * torch.ones(4, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(dyt.alpha.grad.numpy(), alpha.grad.numpy(), rtol=1e-12)


def test_leaky_relu_has_pytorchs_negative_slope_attribute():
    """Init code reads m.negative_slope (kaiming_normal_(w, a=m.negative_slope, ...)) and
    may set it; fastnn's LeakyReLU had no such attribute."""
    torch = pytest.importorskip("torch")
    ours, theirs = nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)
    assert ours.negative_slope == theirs.negative_slope == 0.2
    ours.negative_slope = theirs.negative_slope = 1
    assert repr(ours) == repr(theirs) == "LeakyReLU(negative_slope=1)"
    x = np.linspace(-2, 2, 5).astype(np.float32)
    ours.negative_slope = theirs.negative_slope = 0.5
    np.testing.assert_allclose(ours(fnn.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    assert repr(nn.ConstantPad1d((1, 2), 3)) == repr(torch.nn.ConstantPad1d((1, 2), 3))
