"""Every layer: tape gradients == reverse gradients == central finite differences (float64).

``reverse`` runs on a *fresh* instance that got the same weights through
``load_state_dict`` and never ran forward.
"""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.ops.activations import ACTIVATIONS

F64 = fnn.float64
FEAT = 5


CASES = {
    "Dense": lambda: (nn.Dense(FEAT, 3, dtype=F64), (FEAT,)),
    "Linear": lambda: (nn.Linear(FEAT, 3, dtype=F64), (FEAT,)),
    "Linear-3d": lambda: (nn.Linear(FEAT, 2, dtype=F64), (2, FEAT)),
    "Bias1d": lambda: (nn.Bias1d(FEAT, dtype=F64), (FEAT,)),
    "Diag": lambda: (nn.Diag(FEAT, dtype=F64), (FEAT,)),
    "ScalarScale": lambda: (nn.ScalarScale(0.7, dtype=F64), (FEAT,)),
    "RMSDiv": lambda: (nn.RMSDiv(), (FEAT,)),
    "RMSNorm": lambda: (nn.RMSNorm(FEAT, dtype=F64), (FEAT,)),
    "LayerNorm": lambda: (nn.LayerNorm(FEAT, dtype=F64), (FEAT,)),
    "Softmax": lambda: (nn.Softmax(), (FEAT,)),
    "Softmax-T": lambda: (nn.Softmax(axis=-1, temperature=0.5), (FEAT,)),
    "Softmax-axis0": lambda: (nn.Softmax(axis=0, temperature=2.0), (FEAT,)),
    "Swish": lambda: (nn.Swish(FEAT, dtype=F64), (FEAT,)),
    "Conv1d": lambda: (nn.Conv1d(2, 3, 3, dtype=F64), (2, 8)),
    "Conv1d-strided": lambda: (nn.Conv1d(2, 4, 3, stride=2, padding=1, dilation=2, dtype=F64),
                               (2, 9)),
    "Conv1d-nobias": lambda: (nn.Conv1d(3, 2, 2, bias=False, dtype=F64), (3, 6)),
    "Flatten": lambda: (nn.Flatten(), (2, 3)),
    "GlobalAvgPool1d": lambda: (nn.GlobalAvgPool1d(), (3, 4)),
    "Residual": lambda: (nn.Residual(nn.Linear(FEAT, FEAT, dtype=F64)), (FEAT,)),
    "Residual-MLP": lambda: (nn.Residual(nn.Sequential(
        nn.Linear(FEAT, 4, dtype=F64), nn.Activation("tanh"), nn.Linear(4, FEAT, dtype=F64))),
        (FEAT,)),
    "Sequential": lambda: (nn.Sequential(
        nn.Linear(FEAT, 6, dtype=F64), nn.Activation("gelu"), nn.LayerNorm(6, dtype=F64),
        nn.Swish(6, dtype=F64), nn.Diag(6, dtype=F64), nn.Dense(6, 4, dtype=F64),
        nn.Bias1d(4, dtype=F64), nn.RMSNorm(4, dtype=F64), nn.Activation("silu")), (FEAT,)),
}
for _kind in ACTIVATIONS:
    CASES[f"Activation-{_kind}"] = (lambda k: lambda: (nn.Activation(k), (FEAT,)))(_kind)


def _set_params(layer):
    """Move parameters off their symmetric init (ones/zeros) so every gradient term shows."""
    rng = np.random.default_rng(1)
    for _, p in layer.named_parameters():
        p._data = p._device.ops.from_numpy(
            p.numpy() + rng.uniform(-0.5, 0.5, size=p.shape), p._device.index)


def _objective(layer, x_np, grad_np):
    with fnn.no_grad():
        y = layer(fnn.tensor(x_np, dtype=F64)).numpy()
    return float(np.sum(y * grad_np))


def _fd(fn, array, eps=1e-6):
    """Central differences of fn() with respect to ``array`` (perturbed in place)."""
    out = np.zeros_like(array)
    flat, grad = array.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = fn()
        flat[i] = old - eps
        down = fn()
        flat[i] = old
        grad[i] = (up - down) / (2 * eps)
    return out


@pytest.mark.parametrize("batch", [1, 3, 7])
@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_reverse_and_finite_differences_agree(name, batch):
    layer, tail = CASES[name]()
    _set_params(layer)
    rng = np.random.default_rng(batch)
    x_np = rng.standard_normal((batch,) + tail)
    y_shape = layer(fnn.tensor(x_np, dtype=F64)).shape
    grad_np = rng.standard_normal(y_shape)

    x = fnn.tensor(x_np, dtype=F64, requires_grad=True)
    layer(x).backward(fnn.tensor(grad_np, dtype=F64))
    tape = {n: p.grad.numpy() for n, p in layer.named_parameters()}

    fresh, _ = CASES[name]()
    fresh.load_state_dict(layer.state_dict())
    grad_x, self_grads = fresh.reverse(fnn.tensor(x_np, dtype=F64),
                                       fnn.tensor(grad_np, dtype=F64))
    assert sorted(self_grads) == sorted(tape)

    fd_x = _fd(lambda: _objective(layer, x_np, grad_np), x_np)
    np.testing.assert_allclose(x.grad.numpy(), fd_x, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad_x.numpy(), fd_x, rtol=1e-5, atol=1e-7)
    for pname, p in layer.named_parameters():
        host = p.numpy()  # the CPU backend's array itself: perturbing it moves the layer

        def objective(host=host, p=p):
            p._data = p._device.ops.from_numpy(host, p._device.index)
            return _objective(layer, x_np, grad_np)

        fd_p = _fd(objective, host)
        objective()  # leave the parameter at its unperturbed value for the next one
        np.testing.assert_allclose(tape[pname], fd_p, rtol=1e-5, atol=1e-7, err_msg=pname)
        np.testing.assert_allclose(self_grads[pname].numpy(), fd_p, rtol=1e-5, atol=1e-7,
                                   err_msg=pname)


@pytest.mark.parametrize("batch", [1, 6])
def test_dropout_tape_reverse_and_finite_differences_agree(batch):
    layer = nn.Dropout(0.4)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, 16))
    grad_np = rng.standard_normal((batch, 16))
    x = fnn.tensor(x_np, dtype=F64, requires_grad=True)
    y = layer(x, seed=123)
    y.backward(fnn.tensor(grad_np, dtype=F64))
    kept = y.numpy() != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(y.numpy()[kept], x_np[kept] / 0.6)

    def objective():
        with fnn.no_grad():
            return float(np.sum(layer(fnn.tensor(x_np, dtype=F64), seed=123).numpy() * grad_np))

    fd_x = _fd(objective, x_np)
    fresh = nn.Dropout(0.4)
    grad_x, own = fresh.reverse(fnn.tensor(x_np, dtype=F64), fnn.tensor(grad_np, dtype=F64),
                                seed=123)
    assert own == {}
    np.testing.assert_allclose(x.grad.numpy(), fd_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_x.numpy(), fd_x, rtol=1e-6, atol=1e-8)


def test_dropout_reverse_uses_the_mask_of_the_last_forward_and_is_identity_in_eval():
    layer = nn.Dropout(0.5)
    x = fnn.randn((4, 32), dtype=F64)
    y = layer(x)
    g, _ = layer.reverse(x, fnn.ones((4, 32), dtype=F64))
    np.testing.assert_array_equal(g.numpy() != 0, y.numpy() != 0)
    fresh = nn.Dropout(0.5)
    g_fresh, _ = fresh.reverse(x, fnn.ones((4, 32), dtype=F64))  # works with no forward
    assert set(np.unique(g_fresh.numpy())) <= {0.0, 2.0}
    layer.eval()
    assert layer(x) is x
    np.testing.assert_array_equal(layer.reverse(x, x)[0].numpy(), x.numpy())


def test_sequential_reverse_with_dropout_matches_tape():
    fnn.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 8, dtype=F64), nn.Activation("relu"), nn.Dropout(0.3),
                          nn.Linear(8, 2, dtype=F64))
    x = fnn.randn((5, 6), dtype=F64)
    grad = fnn.randn((5, 2), dtype=F64)
    fnn.manual_seed(11)
    model(x).backward(grad)
    fnn.manual_seed(11)  # the reverse pass redraws the same dropout seed
    _, grads = model.reverse(x, grad)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-12)
