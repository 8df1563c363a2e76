"""Module mechanics: names, classes, state dicts, dtype/device moves, modes, seeds and errors."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn


def mlp(dtype=fnn.float32):
    return nn.Sequential(nn.Linear(4, 8, dtype=dtype), nn.Activation("relu"),
                         nn.Linear(8, 3, dtype=dtype))


def test_named_parameters_are_dotted_like_pytorch_and_carry_classes():
    model = nn.Sequential(nn.Linear(4, 8), nn.Swish(8), nn.Residual(nn.Diag(8)), nn.Dense(8, 2))
    names = {n: p.param_class for n, p in model.named_parameters()}
    assert names == {"0.weight": "connective", "0.bias": "bias", "1.beta": "activation",
                     "2.inner.weight": "connective", "3.weight": "connective"}
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
               for p in model.parameters())
    assert model[0].weight.shape == (8, 4) and model[0].bias.shape == (8,)
    conv = nn.Conv1d(3, 5, 4, groups=1)
    assert conv.weight.shape == (5, 3, 4) and conv.bias.shape == (5,)


def test_init_follows_pytorch_bounds_and_the_seed_reproduces_it():
    fnn.manual_seed(7)
    a = nn.Linear(100, 50)
    fnn.manual_seed(7)
    b = nn.Linear(100, 50)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    w = a.weight.numpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.09  # U(-1/sqrt(100), 1/sqrt(100))
    assert abs(w.std() - 0.1 / np.sqrt(3)) < 0.005
    assert a.weight.dtype == fnn.float32 and a.weight.device == fnn.get_device()


def test_state_dict_round_trip_copies_arrays():
    fnn.manual_seed(0)
    a, b = mlp(), mlp()
    state = a.state_dict()
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    b.load_state_dict(state)
    x = fnn.randn((5, 4))
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    state["0.weight"][:] = 0  # a copy: the model is not changed through it
    assert np.abs(a[0].weight.numpy()).sum() > 0


def test_load_state_dict_from_another_model_lists_every_problem():
    model = mlp()
    other = nn.Sequential(nn.Linear(4, 6), nn.Activation("relu"), nn.Dense(6, 3))
    with pytest.raises(ValueError) as info:
        model.load_state_dict(other.state_dict())
    msg = str(info.value)
    assert "missing keys ['2.bias']" in msg
    assert "0.weight: checkpoint (6, 4), model (8, 4)" in msg
    assert "0.bias: checkpoint (6,), model (8,)" in msg
    state = model.state_dict()
    state["extra"] = np.zeros(2)
    with pytest.raises(ValueError, match="unexpected keys \\['extra'\\]"):
        model.load_state_dict(state)


# gpt-fast's attention: a checkpoint with separate wq, wk, wv loads into one wqkv through
# a load_state_dict pre-hook (the module had no such method: AttributeError)
GPT_FAST_HOOK = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wqkv = nn.Linear(4, 12, bias=False)
        self._register_load_state_dict_pre_hook(self.load_hook)

    def load_hook(self, state_dict, prefix, *args):
        if prefix + "wq.weight" in state_dict:
            wq = state_dict.pop(prefix + "wq.weight")
            wk = state_dict.pop(prefix + "wk.weight")
            wv = state_dict.pop(prefix + "wv.weight")
            state_dict[prefix + "wqkv.weight"] = torch.cat([wq, wk, wv])


def run(parts):
    model = nn.ModuleList([nn.Linear(4, 4), Attention()])
    calls = []
    model[0].register_load_state_dict_pre_hook(
        lambda module, sd, prefix, *rest: calls.append(("pre", type(module).__name__, prefix)))
    model.register_load_state_dict_post_hook(
        lambda module, keys: calls.append(("post", sorted(keys.missing_keys))))
    model[1].register_load_state_dict_post_hook(
        lambda module, keys: keys.missing_keys.remove("0.bias"))  # forgives a key
    state = {k: torch.from_numpy(v) for k, v in parts.items()}
    result = model.load_state_dict(state)
    merged = model[1].wqkv.weight.detach().numpy().copy()
    handle = model[1]._register_load_state_dict_pre_hook(
        lambda module, sd, prefix, *rest: calls.append(("with_module", prefix)), with_module=True)
    handle.remove()
    try:
        model.load_state_dict({k: v for k, v in state.items() if k != "0.weight"})
        strict = "loaded"
    except RuntimeError:
        strict = "raised"
    return (merged, calls, list(result.missing_keys), list(result.unexpected_keys),
            sorted(state), strict)
"""


def test_load_state_dict_hooks_as_pytorchs(monkeypatch):
    pytest.importorskip("torch")
    from tests.test_pytorch_scripts import _fastnn_as_torch, _run

    rng = np.random.default_rng(0)
    parts = {"0.weight": rng.standard_normal((4, 4)).astype(np.float32)}
    for name in ("wq", "wk", "wv"):
        parts[f"1.{name}.weight"] = rng.standard_normal((4, 4)).astype(np.float32)
    theirs = _run(GPT_FAST_HOOK, parts)
    _fastnn_as_torch(monkeypatch)
    ours = _run(GPT_FAST_HOOK, parts)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0][:4], parts["1.wq.weight"])
    assert ours[1:] == theirs[1:]
    # a sub-module's post-hook runs before its parent's; the caller's dict is not edited
    assert ours[1] == [("pre", "Linear", "0."), ("post", []), ("pre", "Linear", "0."),
                       ("post", ["0.weight"])]
    assert ours[4] == sorted(parts) and ours[5] == "raised"


def test_load_state_dict_assign_as_pytorchs():
    """gpt-fast loads its checkpoint with load_state_dict(checkpoint, assign=True): a
    TypeError (no such argument). The state's tensors become the parameters, dtype and
    storage included; a parameter keeps requires_grad; a buffer is replaced too."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((3, 2))  # float64: assign keeps the state's dtype
    mean = rng.standard_normal(3).astype(np.float32)
    found = []
    for lib in (fnn, torch):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        model[0].bias.requires_grad_(False)
        old = model[0].weight
        state = {k: lib.tensor(v.numpy() if hasattr(v, "numpy") else v)
                 for k, v in model.state_dict().items()}
        state["0.weight"], state["1.running_mean"] = lib.tensor(weight), lib.tensor(mean)
        result = model.load_state_dict(state, assign=True)
        w = model[0].weight
        with lib.no_grad():
            state["0.weight"][0, 0] = 100.0  # shared with the parameter
        found.append((str(w.dtype).split(".")[-1], w is not old, type(w).__name__,
                      w.requires_grad, model[0].bias.requires_grad, float(w[0, 0]),
                      model[1].running_mean.numpy().tolist(), list(result.missing_keys)))
    assert found[0] == found[1]
    assert found[0][:2] == ("float64", True) and found[0][5] == 100.0
    with pytest.raises(TypeError, match="assign must be True or False"):
        mlp().load_state_dict(mlp().state_dict(), assign="yes")


def test_to_dtype_converts_parameters_in_place():
    model = mlp()
    params = list(model.parameters())
    before = model.state_dict()
    model.to(fnn.float64)
    # the same objects, so an optimizer keeps them
    assert all(a is b for a, b in zip(model.parameters(), params, strict=True))
    assert all(p.dtype == fnn.float64 for p in params)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name].astype(np.float64))
    assert model(fnn.randn((2, 4), dtype=fnn.float64)).dtype == fnn.float64
    model.to("cpu")


def test_train_and_eval_set_the_mode_recursively():
    model = nn.Sequential(nn.Linear(4, 4), nn.Residual(nn.Dropout(0.5)))
    assert all(m.training for _, m in model.named_modules())
    model.eval()
    assert not any(m.training for _, m in model.named_modules())
    x = fnn.randn((3, 4))
    np.testing.assert_array_equal(model(x).numpy(), model(x).numpy())
    model.train()
    assert model[1].inner.training


def test_wrong_input_width_to_dense_names_the_layer_and_shape():
    with pytest.raises(ValueError, match=r"Dense\(5, 3\): expected input of shape \(\.\.\., 5\)"):
        nn.Dense(5, 3)(fnn.randn((2, 4)))
    with pytest.raises(ValueError, match="in_features=5"):
        nn.Linear(5, 3).reverse(fnn.randn((2, 4)), fnn.randn((2, 3)))


def test_wrong_channel_count_to_conv1d_names_the_expected_shape():
    conv = nn.Conv1d(3, 4, 2)
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, 3, length\)"):
        conv(fnn.randn((2, 5, 10)))
    with pytest.raises(ValueError, match="channel count"):
        conv.reverse(fnn.randn((2, 10)), fnn.randn((2, 4, 9)))


def test_bad_constructor_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown kind 'relu6'"):
        nn.Activation("relu6")
    with pytest.raises(ValueError, match="p must be a number in"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        nn.Softmax(temperature=0)
    with pytest.raises(TypeError, match="not a fastnn Module"):
        nn.Sequential(nn.Linear(2, 2), "relu")


def test_apply_rejects_gradients_for_unknown_names():
    layer = nn.Linear(3, 2)
    opt = fnn.optim.SGD(layer.parameters(), lr=0.1)
    with pytest.raises(KeyError, match="do not name parameters"):
        layer.apply(opt, {"0.weight": fnn.zeros((2, 3))})


class Cube(nn.Module):
    """A user module with forward only: reverse falls back to a private tape."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter.from_numpy(np.array([2.0, -1.0]), "connective",
                                             dtype=fnn.float64)

    def forward(self, x):
        return x * x * x * self.scale


def test_default_reverse_uses_a_private_tape_and_leaves_grads_alone():
    layer = Cube()
    x_np = np.array([[0.5, -1.5], [2.0, 1.0]])
    g_np = np.array([[1.0, 2.0], [-1.0, 0.5]])
    grad_x, grads = layer.reverse(fnn.tensor(x_np), fnn.tensor(g_np))
    np.testing.assert_allclose(grad_x.numpy(), 3 * x_np**2 * np.array([2.0, -1.0]) * g_np)
    np.testing.assert_allclose(grads["scale"].numpy(), (x_np**3 * g_np).sum(0))
    assert layer.scale.grad is None



def test_parameter_constructor_copies_and_checks_its_class():
    t = fnn.randn((2, 3), dtype=fnn.float64)
    p = nn.Parameter(t, "bias")
    assert p.param_class == "bias" and p.dtype == fnn.float64 and p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(p.numpy(), t.numpy())
    assert type(p * 2) is fnn.Tensor  # results of ops are plain tensors
    with pytest.raises(ValueError, match="param_class must be one of"):
        nn.Parameter([1.0], "weights")


def test_leaky_relu_slope_must_be_a_real_number():
    import fastnn.functional as F

    with pytest.raises(TypeError, match="Activation: slope must be a real number, got str"):
        nn.Activation("leaky_relu", slope="a")
    with pytest.raises(TypeError, match="leaky_relu: negative_slope must be a real number"):
        F.leaky_relu(fnn.tensor(np.ones(2)), True)
    assert nn.Activation("leaky_relu", slope=np.float32(0.5)).slope == 0.5
