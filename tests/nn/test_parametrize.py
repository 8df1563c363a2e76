"""nn.utils.parametrize against PyTorch's: values, state_dict keys, gradients, assignment
through right_inverse, chaining, caching, removal, copies and errors."""

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.nn.utils import parametrize as P

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrize

RNG = np.random.default_rng(0)
W, B, X = RNG.normal(size=(3, 3)), RNG.normal(size=(3,)), RNG.normal(size=(4, 3))


def _symmetric(base, lib):
    class Symmetric(base):
        calls = 0

        def forward(self, a):
            type(self).calls += 1
            return a.triu() + a.triu(1).transpose(0, 1)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def _pair(double=False):
    ours = nn.Linear(3, 3, dtype=fnn.float64)
    theirs = torch.nn.Linear(3, 3, dtype=torch.float64)
    ours.load_state_dict({"weight": W, "bias": B})
    theirs.load_state_dict({"weight": torch.tensor(W), "bias": torch.tensor(B)})
    P.register_parametrization(ours, "weight", _symmetric(nn.Module, fnn))
    TP.register_parametrization(theirs, "weight", _symmetric(torch.nn.Module, torch))
    if double:
        P.register_parametrization(ours, "weight", _Scale(nn.Module)())
        TP.register_parametrization(theirs, "weight", _Scale(torch.nn.Module)())
    return ours, theirs


def _Scale(base):
    class Scale(base):
        def forward(self, a):
            return a * 2.0

        def right_inverse(self, a):
            return a / 2.0

    return Scale


@pytest.mark.parametrize("double", [False, True])
def test_matches_torch_values_keys_and_gradients(double):
    ours, theirs = _pair(double)
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    for key in ours_sd:
        np.testing.assert_allclose(np.asarray(ours_sd[key]), theirs_sd[key].numpy())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    out, want = ours(fnn.tensor(X)), theirs(torch.tensor(X))
    (out ** 2).sum().backward()
    (want ** 2).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    original = ours.parametrizations.weight.original
    np.testing.assert_allclose(original.grad.numpy(),
                               theirs.parametrizations.weight.original.grad.numpy(), rtol=1e-12)
    target = RNG.normal(size=(3, 3))
    ours.weight = fnn.tensor(target)  # stored through right_inverse
    theirs.weight = torch.tensor(target)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    assert ours.parametrizations.weight.original is original  # the same leaf, for optimizers


def test_the_original_parameter_keeps_its_identity_and_trains():
    model = nn.Linear(3, 3, dtype=fnn.float64)
    weight = model.weight
    P.register_parametrization(model, "weight", _symmetric(nn.Module, fnn))
    assert model.parametrizations.weight.original is weight
    opt = fnn.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.detach().numpy().copy()
    model(fnn.tensor(X)).sum().backward()
    opt.step()
    after = model.weight.detach().numpy()
    assert not np.allclose(before, after) and np.allclose(after, after.T)
    grad_x, grads = model.reverse(fnn.tensor(X), fnn.ones(4, 3, dtype=fnn.float64))
    assert set(grads) == {"bias", "parametrizations.weight.original"}


def test_cached_computes_once_and_removal_restores_the_class():
    model = nn.Linear(3, 3, dtype=fnn.float64)
    param = _symmetric(nn.Module, fnn)
    P.register_parametrization(model, "weight", param)
    type(param).calls = 0
    with P.cached():
        first, second = model.weight, model.weight
    assert first is second and type(param).calls == 1
    model.weight, model.weight  # noqa: B018  (outside: computed on each read)
    assert type(param).calls == 3
    assert P.is_parametrized(model) and P.is_parametrized(model, "weight")
    assert not P.is_parametrized(model, "bias")
    value = model.weight.detach().numpy()
    P.remove_parametrizations(model, "weight")
    assert type(model) is nn.Linear and not P.is_parametrized(model)
    assert isinstance(model.weight, nn.Parameter) and list(model.state_dict()) == ["bias",
                                                                                    "weight"]
    np.testing.assert_array_equal(model.weight.detach().numpy(), value)
    P.register_parametrization(model, "weight", _symmetric(nn.Module, fnn))
    model.parametrizations.weight.original.data = fnn.tensor(W)
    P.remove_parametrizations(model, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(model.weight.detach().numpy(), W)


def test_copies_and_pickling_as_torch():
    model, _ = _pair()
    clone = copy.deepcopy(model)
    np.testing.assert_array_equal(clone.weight.detach().numpy(), model.weight.detach().numpy())
    clone.parametrizations.weight.original.data = fnn.zeros(3, 3, dtype=fnn.float64)
    assert float(model.weight.abs().sum()) > 0
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(model)


def test_errors_as_torch():
    class Shrink(nn.Module):
        def forward(self, a):
            return a[:2]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Shrink())
    model = P.register_parametrization(nn.Linear(3, 3), "weight", Shrink(), unsafe=True)
    assert model.weight.shape == (2, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(nn.Linear(3, 3), "nothing", Shrink())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(nn.Linear(3, 3), "bias")


@pytest.mark.parametrize("tensor_name", [None, "weight"])
def test_transfer_parametrizations_and_params_shares_them_as_torchs(tensor_name):
    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).T

    class TSym(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).T

    w = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    found = []
    for lib, sym, module in ((fnn, Sym, nn), (torch, TSym, torch.nn)):
        src = module.Linear(4, 4)
        with lib.no_grad():
            src.weight.copy_(lib.tensor(w))
        lib.nn.utils.parametrize.register_parametrization(src, "weight", sym())
        dst = module.Module()  # no weight of its own: it gets one first
        lib.nn.utils.parametrize.transfer_parametrizations_and_params(src, dst, tensor_name)
        assert dst.parametrizations.weight.original is src.parametrizations.weight.original
        assert dst.parametrizations.weight[0] is src.parametrizations.weight[0]
        found.append((sorted(dst.state_dict()), type(dst).__name__,
                      dst.weight.detach().numpy().copy()))
    assert found[0][:2] == found[1][:2]
    np.testing.assert_array_equal(found[0][2], found[1][2])
