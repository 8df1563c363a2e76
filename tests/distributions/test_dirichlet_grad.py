"""Dirichlet and Beta draws carry PyTorch's reparameterised gradient: ``dirichlet_grad``
against ``torch._dirichlet_grad`` on every branch of its approximation, and the gradient
reaching the concentrations from a draw against torch's ``_Dirichlet`` backward at the
same draw."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from fastnn.distributions.dirichlet_grad import dirichlet_grad

torch = pytest.importorskip("torch")
dirichlet_module = pytest.importorskip("torch.distributions.dirichlet")


def _grid():
    """(x, alpha, total) covering x near 0 and 1, alpha and beta both above 6 (near the
    mean and away from it) and the rational correction."""
    rng = np.random.default_rng(50)
    alpha = np.exp(rng.uniform(-3, 4.5, 4000))
    beta = np.exp(rng.uniform(-3, 4.5, 4000))
    x = np.clip(rng.beta(alpha, beta), 1e-300, 1 - 1e-16)
    near_mean = np.array([20.0, 50.0]), np.array([30.0, 50.0])
    x_mean = near_mean[0] / (near_mean[0] + near_mean[1])
    alpha = np.concatenate([alpha, near_mean[0], [0.3, 2.0, 8.0]])
    beta = np.concatenate([beta, near_mean[1], [0.3, 3.0, 9.0]])
    x = np.concatenate([x, x_mean, [0.5, 0.4, 0.47]])
    return x, alpha, alpha + beta


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dirichlet_grad_matches_torch(dtype):
    x, alpha, total = (v.astype(dtype) for v in _grid())
    x = np.clip(x, np.finfo(dtype).tiny, 1 - np.finfo(dtype).eps)
    ours = dirichlet_grad(fnn.tensor(x), fnn.tensor(alpha), fnn.tensor(total))
    theirs = torch._dirichlet_grad(torch.tensor(x), torch.tensor(alpha),
                                   torch.tensor(total)).numpy()
    assert ours.dtype == fnn.tensor(x).dtype and np.isfinite(ours.numpy()).all()
    if dtype == np.float64:
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-10, atol=0)
    else:  # torch runs parts of it in float32 arithmetic; ours is float64 throughout
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=2e-3, atol=1e-6)


def test_dirichlet_draw_gradient_matches_torch_at_the_same_draw():
    rng = np.random.default_rng(51)
    concentration = np.exp(rng.uniform(-2, 3, (4, 3)))
    leaf = fnn.tensor(concentration, requires_grad=True)
    fnn.manual_seed(52)
    draws = fd.Dirichlet(leaf).rsample((5,))
    assert draws.shape == (5, 4, 3) and draws.requires_grad
    weights = rng.normal(size=(5, 4, 3))
    (draws.square() * fnn.tensor(weights)).sum().backward()
    x = torch.tensor(draws.detach().numpy())
    grad_output = 2 * x * torch.tensor(weights)
    theirs = dirichlet_module._Dirichlet_backward(
        x, torch.tensor(concentration).expand(5, 4, 3), grad_output).sum(0)
    np.testing.assert_allclose(leaf.grad.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_beta_draw_gradient_matches_torch_at_the_same_draw():
    rng = np.random.default_rng(53)
    c1, c0 = np.exp(rng.uniform(-2, 3, 6)), np.exp(rng.uniform(-2, 3, 6))
    leaves = fnn.tensor(c1, requires_grad=True), fnn.tensor(c0, requires_grad=True)
    fnn.manual_seed(54)
    draws = fd.Beta(*leaves).rsample((4,))
    draws.sin().sum().backward()
    x = torch.tensor(draws.detach().numpy())
    pairs = torch.stack([x, 1 - x], -1)
    grad_output = torch.stack([x.cos(), torch.zeros_like(x)], -1)
    both = torch.tensor(np.stack([c1, c0], -1)).expand(4, 6, 2)
    theirs = dirichlet_module._Dirichlet_backward(pairs, both, grad_output).sum(0)
    np.testing.assert_allclose(leaves[0].grad.numpy(), theirs[:, 0].numpy(), rtol=1e-10)
    np.testing.assert_allclose(leaves[1].grad.numpy(), theirs[:, 1].numpy(), rtol=1e-10)
