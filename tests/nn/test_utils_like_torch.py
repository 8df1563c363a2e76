"""torch.nn.utils pieces as PyTorch's: the spectral_norm parametrization, the two halves of
clip_grad_norm_, Sequential's + and *, and load_state_dict leaving .grad alone."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

try:
    import torch
except ImportError:  # pragma: no cover - the references below hold without it
    torch = None

F64 = fnn.float64


def _unit(a):
    return a / max(np.linalg.norm(a), 1e-12)


def test_spectral_norm_forward_and_gradient_against_numpy():
    layer = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 3, dtype=F64))
    assert sorted(layer.state_dict()) == ["bias", "parametrizations.weight.0._u",
                                          "parametrizations.weight.0._v",
                                          "parametrizations.weight.original"]
    sn = layer.parametrizations.weight[0]
    w = layer.parametrizations.weight.original.detach().numpy().copy()
    u0, v0 = sn._u.numpy().copy(), sn._v.numpy().copy()
    weight = layer.weight  # training mode: one power step, u from v then v from u
    u = _unit(w @ v0)
    v = _unit(w.T @ u)
    sigma = u @ w @ v
    np.testing.assert_allclose(weight.detach().numpy(), w / sigma, rtol=1e-12)
    np.testing.assert_allclose(sn._u.numpy(), u, rtol=1e-12)
    np.testing.assert_allclose(sn._v.numpy(), v, rtol=1e-12)
    # the gradient reaches the original through W and sigma (u, v held constant)
    r = np.random.default_rng(0).standard_normal(w.shape)
    layer.eval()  # no power step: u and v as they are now
    (layer.weight * fnn.tensor(r, dtype=F64)).sum().backward()
    want = r / sigma - (np.sum(r * w) / sigma ** 2) * np.outer(u, v)
    np.testing.assert_allclose(layer.parametrizations.weight.original.grad.numpy(), want,
                               rtol=1e-10)
    assert u0.shape == (3,) and v0.shape == (5,)


def test_spectral_norm_converges_to_the_largest_singular_value():
    rng = np.random.default_rng(1)
    q1, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    q2, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    w = q1 @ np.diag([5.0, 1.0, 0.5, 0.1]) @ q2[:4]
    layer = nn.Linear(6, 4, dtype=F64)
    with fnn.no_grad():
        layer.weight.copy_(fnn.tensor(w, dtype=F64))
    nn.utils.parametrizations.spectral_norm(layer)
    for _ in range(5):
        got = layer.weight.detach().numpy()
    np.testing.assert_allclose(np.linalg.svd(got, compute_uv=False)[0], 1.0, rtol=1e-9)


@pytest.mark.parametrize("make", ["linear", "conv", "conv_transpose"])
def test_spectral_norm_matches_pytorch(make):
    if torch is None:
        pytest.skip("PyTorch not installed")
    build = {"linear": lambda L: L.nn.Linear(5, 3),
             "conv": lambda L: L.nn.Conv2d(2, 4, 3),
             "conv_transpose": lambda L: L.nn.ConvTranspose2d(2, 4, 3)}[make]
    torch.manual_seed(0)
    ref = torch.nn.utils.parametrizations.spectral_norm(build(torch))
    got = nn.utils.parametrizations.spectral_norm(build(fnn))
    assert list(got.state_dict()) == list(ref.state_dict())
    got.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    shape = (2, 5) if make == "linear" else (1, 2, 5, 5)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for mode in ("train", "eval", "train"):
        getattr(ref, mode)()
        getattr(got, mode)()
        a, b = ref(torch.tensor(x)), got(fnn.tensor(x))
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=2e-6)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(got.parametrizations.weight.original.grad.numpy(),
                               ref.parametrizations.weight.original.grad.numpy(), atol=2e-5)


def _model_with_grads():
    fnn.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    m(fnn.ones(2, 3) * 5).sum().backward()
    return m


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), "inf"])
def test_get_total_norm_and_clip_grads_with_norm(norm_type):
    m = _model_with_grads()
    grads = np.concatenate([p.grad.numpy().ravel() for p in m.parameters()]).astype(np.float64)
    p = float(norm_type)
    want = np.abs(grads).max() if p == np.inf else np.sum(np.abs(grads) ** p) ** (1 / p)
    total = nn.utils.get_total_norm([q.grad for q in m.parameters()], norm_type)
    assert total.shape == () and total.dtype is fnn.float32
    np.testing.assert_allclose(float(total), want, rtol=1e-5)
    nn.utils.clip_grads_with_norm_(m.parameters(), 0.5, total)
    np.testing.assert_allclose(
        np.concatenate([q.grad.numpy().ravel() for q in m.parameters()]),
        grads * 0.5 / (want + 1e-6), rtol=1e-5)
    again = _model_with_grads()  # clip_grad_norm_ is the two halves, 'inf' as a string too
    np.testing.assert_allclose(float(nn.utils.clip_grad_norm_(again.parameters(), 0.5,
                                                              norm_type)), want, rtol=1e-5)
    with pytest.raises(ValueError, match="norm_type"):
        nn.utils.clip_grad_norm_(again.parameters(), 0.5, "two")


def test_sequential_add_and_multiply_share_modules():
    a, b = nn.Sequential(nn.Linear(2, 2)), nn.Sequential(nn.ReLU(), nn.Linear(2, 1))
    both = a + b
    assert [type(x) for x in both] == [nn.Linear, nn.ReLU, nn.Linear]
    assert both[0] is a[0] and both[2] is b[1] and len(a) == 1
    twice = a * 3
    assert len(twice) == 3 and twice[2] is a[0]
    assert len(list(twice.parameters())) == 2  # the repeats share one Linear's parameters
    assert len(2 * a) == 2
    a += b
    assert len(a) == 3 and a[2] is b[1]
    a *= 2
    assert len(a) == 6 and a[3] is a[0]
    with pytest.raises(ValueError, match="positive"):
        a * 0
    with pytest.raises(TypeError):
        a + nn.ReLU()


def test_load_state_dict_leaves_grads():
    """PyTorch's load_state_dict copies under no_grad and leaves .grad as it was."""
    m = _model_with_grads()
    before = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    state = {k: v * 0 for k, v in m.state_dict().items()}
    m.load_state_dict(state)
    for n, p in m.named_parameters():
        np.testing.assert_array_equal(p.grad.numpy(), before[n])
        assert not p.detach().numpy().any()


@pytest.mark.parametrize("name, args", [("xavier_uniform", ()), ("kaiming_normal", ()),
                                        ("normal", (0.0, 0.5)), ("constant", (0.25,)),
                                        ("eye", ()), ("orthogonal", ())])
def test_deprecated_init_spellings_warn_and_initialise(name, args):
    """nn.init.xavier_uniform(w) (old scripts) warns as PyTorch's and fills w in place as
    xavier_uniform_ would with the same seed."""
    w, ref = fnn.empty(4, 4), fnn.empty(4, 4)
    fnn.manual_seed(3)
    with pytest.warns(FutureWarning, match=f"nn.init.{name}_"):
        out = getattr(nn.init, name)(w, *args)
    fnn.manual_seed(3)
    getattr(nn.init, name + "_")(ref, *args)
    assert out is w
    np.testing.assert_array_equal(w.numpy(), ref.numpy())


def test_skip_init_builds_the_module_on_its_device():
    layer = nn.utils.skip_init(nn.Linear, 4, 3, bias=False)
    assert layer.weight.shape == (3, 4) and layer.bias is None
    assert layer.weight.device == fnn.device("cpu")
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int, 3)
    if torch is not None:
        ref = torch.nn.utils.skip_init(torch.nn.Linear, 4, 3, bias=False)
        assert tuple(ref.weight.shape) == tuple(layer.weight.shape)


def test_stateless_functional_call_is_func_functional_call_with_a_warning():
    layer = nn.Linear(4, 3, dtype=F64)
    w = fnn.tensor(np.arange(12.0).reshape(3, 4))
    x = fnn.tensor(np.ones((2, 4)))
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = nn.utils.stateless.functional_call(layer, {"weight": w}, (x,))
    np.testing.assert_allclose(out.numpy(), x.numpy() @ w.numpy().T + layer.bias.numpy())
