"""fnn.func.functional_call against torch.func.functional_call: outputs, gradients, restore."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.func import functional_call

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
W, B, X = RNG.normal(size=(2, 3)), RNG.normal(size=(2,)), RNG.normal(size=(4, 3))


def test_linear_matches_torch_and_gradients_reach_the_substitutes():
    ours = nn.Linear(3, 2, dtype=fnn.float64)
    theirs = torch.nn.Linear(3, 2, dtype=torch.float64)
    w, b = fnn.tensor(W, requires_grad=True), fnn.tensor(B, requires_grad=True)
    tw, tb = torch.tensor(W, requires_grad=True), torch.tensor(B, requires_grad=True)
    out = functional_call(ours, {"weight": w, "bias": b}, fnn.tensor(X))
    want = torch.func.functional_call(theirs, {"weight": tw, "bias": tb}, torch.tensor(X))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    (out ** 2).sum().backward()
    (want ** 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    assert ours.weight.grad is None and ours.bias.grad is None
    assert isinstance(ours.weight, nn.Parameter) and dict(ours.named_parameters())[
        "weight"] is ours.weight  # the module's own parameters are back


def test_partial_dicts_buffers_and_restore_after_an_error():
    model = nn.Sequential(nn.Linear(3, 2, dtype=fnn.float64), nn.BatchNorm1d(2,
                                                                          dtype=fnn.float64))
    model.eval()
    mean = fnn.tensor([1.0, -1.0], dtype=fnn.float64)
    out = functional_call(model, ({"0.weight": fnn.tensor(W)}, {"1.running_mean": mean}),
                          (fnn.tensor(X),))
    linear = X @ W.T + model[0].bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), (linear - [1.0, -1.0]) / np.sqrt(1 + 1e-5),
                               rtol=1e-10)
    assert float(model[1].running_mean.abs().sum()) == 0.0
    original = model[0].weight
    with pytest.raises(ValueError, match="in_features"):
        functional_call(model, {"0.weight": fnn.tensor(W)}, (fnn.tensor(X[:, :2]),))
    assert model[0].weight is original and model[0]._parameters["weight"] is original


def test_tied_weights_and_strict():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3, bias=False, dtype=fnn.float64)
            self.b = nn.Linear(3, 3, bias=False, dtype=fnn.float64)
            self.b.weight = self.a.weight

        def forward(self, x, scale=1.0):
            return self.b(self.a(x)) * scale

    model, w = Tied(), fnn.tensor(RNG.normal(size=(3, 3)))
    out = functional_call(model, {"a.weight": w}, fnn.tensor(X), {"scale": 2.0})
    np.testing.assert_allclose(out.numpy(), X @ w.numpy().T @ w.numpy().T * 2, rtol=1e-12)
    untied = functional_call(model, {"a.weight": w}, fnn.tensor(X), tie_weights=False)
    own = model.a.weight.detach().numpy()
    np.testing.assert_allclose(untied.detach().numpy(), X @ w.numpy().T @ own.T, rtol=1e-12)
    with pytest.raises(ValueError, match="tied"):
        functional_call(model, {"a.weight": w, "b.weight": w * 1}, fnn.tensor(X))
    with pytest.raises(RuntimeError, match="Unexpected key"):
        functional_call(model, {"a.weight": w, "c": w}, fnn.tensor(X), strict=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(nn.Linear(3, 2), {"weight": fnn.zeros(2, 3)}, fnn.zeros(1, 3),
                        strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        functional_call(model, ({"a.weight": w}, {"a.weight": w}), fnn.tensor(X))
    assert fnn.func.functional_call is functional_call


def test_replace_all_batch_norm_modules_drops_the_running_statistics():
    # the per-sample-gradient recipe: vmap over a model whose batch norm layers would
    # otherwise update their running statistics in place
    from fastnn.func import grad, replace_all_batch_norm_modules_, vmap

    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(),
                          nn.Sequential(nn.Linear(6, 2), nn.BatchNorm1d(2, affine=False)))
    assert replace_all_batch_norm_modules_(model) is model
    assert sorted(model.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.weight",
                                          "3.0.bias", "3.0.weight"]
    assert [m.track_running_stats for m in (model[1], model[3][1])] == [False, False]
    x = fnn.tensor(np.random.default_rng(0).standard_normal((3, 5, 4)), dtype=fnn.float32)
    model.eval()  # batch statistics still: eval mode has nothing else to use
    out = model(x[0])
    np.testing.assert_allclose(out.numpy().mean(0), 0, atol=1e-6)
    params = {k: v.detach() for k, v in model.named_parameters()}
    per_group = vmap(grad(lambda p, xb: (functional_call(model, p, (xb,)) ** 3).sum()),
                     in_dims=(None, 0))(params, x)
    assert per_group["0.weight"].shape == (3, 6, 4)


def test_a_parametrized_tensor_given_by_its_own_name_leaves_the_module_as_it_was():
    # PyTorch sets it through the parametrization's property (right_inverse) and sets the
    # old value back the same way; fastnn wrote the originals, then failed to restore them
    from fastnn.nn.utils import parametrizations

    layer = parametrizations.weight_norm(nn.Linear(4, 3, dtype=fnn.float64))
    before = layer.weight.detach().numpy().copy()
    w = fnn.tensor(np.arange(12.0).reshape(3, 4) - 5)
    x = fnn.tensor(np.ones((2, 4)))
    out = functional_call(layer, {"weight": w, "bias": fnn.zeros(3, dtype=fnn.float64)}, (x,))
    np.testing.assert_allclose(out.numpy(), x.numpy() @ w.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(layer.weight.detach().numpy(), before, rtol=1e-12)
