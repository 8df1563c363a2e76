"""The activation functions and modules against PyTorch: values and gradients (at the
kinks too, where PyTorch picks a side), inplace=, the F / fnn / Tensor spellings where
PyTorch has them, module reprs and PReLU's state_dict."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# the kinks (0, +-3, 6, +-lambd) are on the grid, with +-inf and NaN
GRID = np.concatenate([np.linspace(-7, 7, 57), [0.5, -0.5, 0.6, -0.6, np.inf, -np.inf,
                                               np.nan]])
FUNCTIONS = [("celu", (0.7,)), ("relu6", ()), ("hardsigmoid", ()), ("hardswish", ()),
             ("softsign", ()), ("logsigmoid", ()), ("softshrink", (0.6,)),
             ("hardshrink", (0.6,)), ("tanhshrink", ()), ("threshold", (0.5, -2.0)),
             ("rrelu", ()), ("elu", ()), ("selu", ()), ("mish", ()), ("hardtanh", ()),
             ("relu", ()), ("leaky_relu", (0.1,)), ("silu", ()), ("gelu", ()), ("glu", ()),
             ("sigmoid", ()), ("tanh", ()), ("softplus", ())]


LOOSE = ("celu", "hardsigmoid", "hardswish")  # PyTorch's kernels hold float32 constants


@pytest.mark.parametrize("name, args", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functions_match_torch(device, name, args):
    values = GRID  # 64 values: glu halves them
    x = fnn.tensor(values, device=device, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    out, ref = getattr(F, name)(x, *args), getattr(TF, name)(t, *args)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12,
                               atol=1e-15, equal_nan=True)
    weights = np.linspace(-1, 1, ref.numel())
    (out * fnn.tensor(weights, device=device)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    # NOTE: at NaN PyTorch's gradients follow each kernel's comparison (relu passes it,
    # hardtanh stops it): not compared
    finite = ~np.isnan(values)
    np.testing.assert_allclose(x.grad.numpy()[finite], t.grad.numpy()[finite],
                               rtol=1e-6 if name in LOOSE else 1e-10, atol=1e-15)
    small = fnn.tensor(np.arange(6.0).reshape(2, 3) - 2.5, dtype=fnn.float32).t()  # a view
    np.testing.assert_allclose(getattr(F, name)(small, *args).numpy(), getattr(TF, name)(
        torch.tensor(np.arange(6.0).reshape(2, 3) - 2.5, dtype=torch.float32).t(),
        *args).numpy(), rtol=1e-6, atol=1e-7)


def test_spellings_follow_torch():
    for name, _ in FUNCTIONS + [("softmin", ()), ("prelu", ())]:
        assert hasattr(F, name), name
        assert hasattr(fnn, name) == hasattr(torch, name) or name == "rrelu", name
        if hasattr(torch.Tensor, name):
            assert hasattr(fnn.Tensor, name), name
    assert fnn.relu is F.relu and fnn.softmax is F.softmax


def test_inplace_writes_the_input():
    for name in ("relu", "relu6", "hardsigmoid", "hardswish", "elu", "selu", "celu",
                 "leaky_relu", "hardtanh", "silu", "mish"):
        x = fnn.tensor([-2.0, 0.5, 7.0])
        y = getattr(F, name)(x, inplace=True)
        want = getattr(TF, name)(torch.tensor([-2.0, 0.5, 7.0]))
        np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-6)
        assert y is x


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_hardtanh_and_relu6_keep_an_integer_dtype(dtype):
    """PyTorch clips integer tensors in their own dtype (each bound truncated toward 0);
    fastnn gave float32."""
    host = np.arange(-3, 9, dtype=dtype)
    for run in (lambda f, x: f.relu6(x), lambda f, x: f.hardtanh(x),
                lambda f, x: f.hardtanh(x, -1.5, 2.7)):
        got, want = run(F, fnn.tensor(host)), run(TF, torch.tensor(host))
        assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_prelu_softmin_rrelu():
    rng = np.random.default_rng(0)
    host, w = rng.normal(size=(2, 3, 4)), np.array([0.1, -0.2, 0.3])
    for weight in (w, w[:1]):
        x, t = fnn.tensor(host, requires_grad=True), torch.tensor(host, requires_grad=True)
        fw, tw = fnn.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
        x.prelu(fw).sum().backward()
        t.prelu(tw).sum().backward()
        np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="one per channel"):
        F.prelu(fnn.tensor(host), fnn.ones(2))
    for dim in (0, 1, -1):
        np.testing.assert_allclose(F.softmin(fnn.tensor(host), dim).numpy(),
                                   TF.softmin(torch.tensor(host), dim).numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmin(fnn.tensor(host))
    fnn.manual_seed(0)
    out = F.rrelu(fnn.full((1000,), -1.0), training=True).numpy()
    assert -1 / 3 <= out.min() and out.max() <= -1 / 8 and out.std() > 0.01


MODULES = [("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()), ("Softsign", ()),
           ("LogSigmoid", ()), ("Softmin", (1,)), ("Softshrink", (0.3,)), ("Hardshrink", ()),
           ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)), ("RReLU", ()), ("CELU", (0.5,)),
           ("PReLU", ()), ("PReLU", (3,))]


@pytest.mark.parametrize("name, args", MODULES, ids=[f"{m[0]}{m[1]}" for m in MODULES])
def test_modules_match_torch(name, args):
    mine, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mine) == repr(theirs)
    mine.eval()
    theirs.eval()
    theirs.double()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    mine.load_state_dict({k: fnn.tensor(v, dtype=fnn.float32) for k, v in state.items()})
    assert sorted(mine.state_dict()) == sorted(state)
    host = np.random.default_rng(1).normal(size=(2, 3, 4)) * 3
    x, t = fnn.tensor(host, dtype=fnn.float32, requires_grad=True), torch.tensor(
        host, requires_grad=True)
    mine(x).sum().backward()
    theirs(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine(x).detach().numpy(), theirs(t).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    if name == "PReLU":
        np.testing.assert_allclose(mine.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-5)
