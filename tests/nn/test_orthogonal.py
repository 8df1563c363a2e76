"""parametrizations.orthogonal against PyTorch's: the same orthogonal weight from the same
(X, base), gradients included; keys, defaults and errors."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.nn.utils.orthogonal import householder_product, matrix_exp

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrizations

RNG = np.random.default_rng(0)


def _pair(out_features, in_features, orthogonal_map=None):
    ours = nn.Linear(in_features, out_features, dtype=fnn.float64)
    theirs = torch.nn.Linear(in_features, out_features).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    nn.utils.parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    TP.orthogonal(theirs, orthogonal_map=orthogonal_map)
    return ours, theirs


@pytest.mark.parametrize("shape, orthogonal_map", [((4, 4), None), ((4, 4), "householder"),
                                                   ((5, 3), None), ((3, 5), None),
                                                   ((5, 3), "matrix_exp"), ((4, 4), "cayley"),
                                                   ((3, 5), "cayley")])
def test_same_weight_and_gradients_as_torch(shape, orthogonal_map):
    ours, theirs = _pair(*shape, orthogonal_map)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # the same point away from the start (X random, and torch's base for a random completion)
    x = RNG.normal(size=shape) * 0.5
    state = {k: v.numpy() for k, v in theirs.state_dict().items()}
    state["parametrizations.weight.original"] = x
    ours.load_state_dict(state)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    weight, want = ours.weight, theirs.weight
    np.testing.assert_allclose(weight.detach().numpy(), want.detach().numpy(), rtol=1e-9,
                               atol=1e-12)
    probe = RNG.normal(size=shape)
    (weight * fnn.tensor(probe)).sum().backward()
    (want * torch.tensor(probe)).sum().backward()
    np.testing.assert_allclose(ours.parametrizations.weight.original.grad.numpy(),
                               theirs.parametrizations.weight.original.grad.numpy(),
                               rtol=1e-8, atol=1e-10)


def test_square_start_is_the_q_of_the_weight_as_torch():
    ours, theirs = _pair(4, 4)  # no randomness: base is the QR's Q of the old weight
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    target = np.linalg.qr(RNG.normal(size=(4, 4)))[0]
    ours.weight = fnn.tensor(target)
    np.testing.assert_allclose(ours.weight.detach().numpy(), target, atol=1e-12)


@pytest.mark.parametrize("shape, orthogonal_map", [((4, 4), "householder"), ((5, 3), None),
                                                   ((3, 5), None), ((4, 4), None)])
def test_without_trivialization_as_torch(shape, orthogonal_map):
    ours = nn.Linear(shape[1], shape[0], dtype=fnn.float64)
    theirs = torch.nn.Linear(shape[1], shape[0]).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    nn.utils.parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map,
                                         use_trivialization=False)
    TP.orthogonal(theirs, orthogonal_map=orthogonal_map, use_trivialization=False)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-9, atol=1e-12)
    target = np.linalg.qr(RNG.normal(size=(max(shape), max(shape))))[0][:shape[0], :shape[1]]
    if shape[0] < shape[1]:
        target = np.linalg.qr(RNG.normal(size=shape[::-1]))[0].T
    if orthogonal_map == "householder" or shape[0] != shape[1]:
        ours.weight = fnn.tensor(target)
        theirs.weight = torch.tensor(target)
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                                   rtol=1e-9, atol=1e-12)
    else:
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            ours.weight = fnn.tensor(target)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (2, 4, 4)])
def test_the_weight_is_orthogonal(shape):
    layer = nn.Module()
    layer.weight = nn.Parameter(fnn.tensor(RNG.normal(size=shape)))
    nn.utils.parametrizations.orthogonal(layer)
    w = layer.weight.detach().numpy()
    gram = w @ np.swapaxes(w, -1, -2) if shape[-2] <= shape[-1] else np.swapaxes(w, -1, -2) @ w
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape),
                               atol=1e-12)


def test_building_blocks_match_torch():
    a = RNG.normal(size=(2, 4, 4))
    np.testing.assert_allclose(matrix_exp(fnn.tensor(a * 3)).numpy(),
                               torch.matrix_exp(torch.tensor(a * 3)).numpy(), rtol=1e-10)
    reflectors, tau = RNG.normal(size=(5, 3)), RNG.uniform(0.5, 1.5, size=3)
    np.testing.assert_allclose(
        householder_product(fnn.tensor(reflectors), fnn.tensor(tau)).numpy(),
        torch.linalg.householder_product(torch.tensor(reflectors), torch.tensor(tau)).numpy(),
        rtol=1e-10, atol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match="has to be one of"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    layer = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley",
                                                 use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        layer.weight = fnn.eye(3)
