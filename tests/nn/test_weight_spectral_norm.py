"""weight_norm (both forms), spectral_norm and conv/linear-BatchNorm fusion against PyTorch."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

torch = pytest.importorskip("torch")
TU = torch.nn.utils

RNG = np.random.default_rng(0)


def _layers(kind):
    """The same layer in fastnn and torch (float64, equal parameters) and an input."""
    if kind == "linear":
        ours, theirs = nn.Linear(4, 3, dtype=fnn.float64), torch.nn.Linear(4, 3).double()
        x = RNG.normal(size=(5, 4))
    elif kind == "conv":
        ours, theirs = nn.Conv2d(2, 3, 3, dtype=fnn.float64), torch.nn.Conv2d(2, 3, 3).double()
        x = RNG.normal(size=(2, 2, 5, 5))
    else:
        ours = nn.ConvTranspose2d(3, 2, 3, dtype=fnn.float64)
        theirs = torch.nn.ConvTranspose2d(3, 2, 3).double()
        x = RNG.normal(size=(2, 3, 4, 4))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs, x


def _run(ours, theirs, x):
    """Forward and backward of sum(y^2) in both; the outputs must agree."""
    out, want = ours(fnn.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    (out ** 2).sum().backward()
    (want ** 2).sum().backward()


def _same_grads(ours, theirs):
    mine = dict(ours.named_parameters())
    assert list(mine) == [n for n, _ in theirs.named_parameters()]
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(mine[name].grad.numpy(), p.grad.numpy(), rtol=1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_weight_norm_parametrization_matches_torch(kind, dim):
    ours, theirs, x = _layers(kind)
    nn.utils.parametrizations.weight_norm(ours, dim=dim)
    TU.parametrizations.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(np.asarray(ours.state_dict()[key]), value.numpy(),
                                   rtol=1e-12)
    _run(ours, theirs, x)
    _same_grads(ours, theirs)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_old_weight_norm_matches_torch_and_is_removed(dim):
    ours, theirs, x = _layers("conv")
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(ours, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TU.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight_g",
                                                                     "weight_v"]
    with fnn.no_grad():
        ours.weight_g.mul_(1.5)  # the hook recomputes weight before each forward
    with torch.no_grad():
        theirs.weight_g.mul_(1.5)
    _run(ours, theirs, x)
    _same_grads(ours, theirs)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        nn.utils.weight_norm(ours, dim=dim)
    nn.utils.remove_weight_norm(ours)
    TU.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize("kind", ["linear", "conv", "transposed"])
def test_spectral_norm_matches_torch(kind, iterations):
    ours, theirs, x = _layers(kind)
    nn.utils.spectral_norm(ours, n_power_iterations=iterations)
    TU.spectral_norm(theirs, n_power_iterations=iterations)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})  # same u, v
    for _ in range(2):  # training: power iteration updates u and v in place
        _run(ours, theirs, x)
        for name in ("weight_u", "weight_v"):
            np.testing.assert_allclose(getattr(ours, name).numpy(),
                                       getattr(theirs, name).numpy(), rtol=1e-9)
    _same_grads(ours, theirs)  # accumulated over both steps
    ours.eval()
    theirs.eval()
    u_before = ours.weight_u.numpy().copy()
    _run(ours, theirs, x)
    np.testing.assert_array_equal(ours.weight_u.numpy(), u_before)  # eval: no update
    nn.utils.remove_spectral_norm(ours)
    TU.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-10)


def test_spectral_norm_divides_by_the_largest_singular_value():
    layer = nn.utils.spectral_norm(nn.Linear(6, 4, dtype=fnn.float64), n_power_iterations=50)
    layer(fnn.zeros(1, 6, dtype=fnn.float64))
    assert abs(np.linalg.norm(layer.weight.detach().numpy(), 2) - 1.0) < 1e-6
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
def test_fuse_conv_bn_eval_matches_torch(bias, transposed):
    if transposed:
        conv, tconv = nn.ConvTranspose2d(3, 2, 3, bias=bias), torch.nn.ConvTranspose2d(
            3, 2, 3, bias=bias)
    else:
        conv, tconv = nn.Conv2d(3, 2, 3, bias=bias), torch.nn.Conv2d(3, 2, 3, bias=bias)
    conv.load_state_dict({k: v.numpy() for k, v in tconv.state_dict().items()})
    bn, tbn = nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2)
    state = {"weight": RNG.normal(size=2), "bias": RNG.normal(size=2),
             "running_mean": RNG.normal(size=2), "running_var": RNG.uniform(0.5, 2, size=2)}
    bn.load_state_dict({**state, "num_batches_tracked": np.array(3)})
    tbn.load_state_dict({k: torch.tensor(v, dtype=torch.float32) for k, v in state.items()}
                        | {"num_batches_tracked": torch.tensor(3)})
    for m in (conv, tconv, bn, tbn):
        m.eval()
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transposed)
    tfused = TU.fuse_conv_bn_eval(tconv, tbn, transpose=transposed)
    for name in ("weight", "bias"):
        np.testing.assert_allclose(getattr(fused, name).detach().numpy(),
                                   getattr(tfused, name).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    x = fnn.tensor(RNG.normal(size=(1, 3, 5, 5)), dtype=fnn.float32)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    assert isinstance(fused.bias, nn.Parameter) and conv.bias is not fused.bias
    conv.train()
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_conv_bn_eval(conv, bn)


def test_fuse_linear_bn_eval():
    linear, bn = nn.Linear(4, 3, dtype=fnn.float64), nn.BatchNorm1d(3, dtype=fnn.float64)
    bn.load_state_dict({"weight": RNG.normal(size=3), "bias": RNG.normal(size=3),
                        "running_mean": RNG.normal(size=3), "running_var": np.ones(3) * 2,
                        "num_batches_tracked": np.array(1)})
    linear.eval()
    bn.eval()
    fused = nn.utils.fuse_linear_bn_eval(linear, bn)
    x = fnn.tensor(RNG.normal(size=(5, 4)))
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(linear(x)).detach().numpy(),
                               rtol=1e-12)
