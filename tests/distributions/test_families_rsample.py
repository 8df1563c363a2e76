"""Pathwise gradients of LogNormal, HalfNormal, Cauchy and Gumbel draws against torch's
on the same standardised noise, and StudentT's (whose df gradient goes through a Gamma
draw) as an unbiased estimate of the gradient of E[x**2], within five standard errors."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from tests.distributions.families import CASES
from tests.distributions.pairs import grads_close, pair

torch = pytest.importorskip("torch")

NOISE = {  # (draw -> standard noise with fastnn, noise -> draw with torch)
    "LogNormal": (lambda d, x: (x.log() - d.loc) / d.scale,
                  lambda d, z: (d.loc + d.scale * z).exp()),
    "HalfNormal": (lambda d, x: x / d.scale, lambda d, z: d.scale * z),
    "Cauchy": (lambda d, x: (x - d.loc) / d.scale, lambda d, z: d.loc + d.scale * z),
    "Gumbel": (lambda d, x: (x - d.loc) / d.scale, lambda d, z: d.loc + d.scale * z),
}


@pytest.mark.parametrize("name", sorted(NOISE))
def test_rsample_gradients_match_torch_on_the_same_noise(name):
    rng = np.random.default_rng(30)
    params = CASES[name].params(rng, np.float64)
    ours, theirs, our_leaves, their_leaves = pair(torch, name, params)
    fnn.manual_seed(31)
    draws = ours.rsample((6,))
    assert draws.shape == (6, 3, 4) and draws.requires_grad
    standardise, replay = NOISE[name]
    noise = standardise(ours, draws).detach().numpy()
    (draws.atan() + draws * 0.3).sum().backward()
    replayed = replay(theirs, torch.tensor(noise))
    np.testing.assert_allclose(replayed.detach().numpy(), draws.detach().numpy(), rtol=1e-10)
    (replayed.atan() + replayed * 0.3).sum().backward()
    grads_close(our_leaves, their_leaves, rtol=1e-8, atol=1e-10)


def test_student_t_gradient_of_the_second_moment_is_unbiased():
    count = 40000
    df, loc, scale = 6.0, 0.5, 1.5
    leaves = [fnn.tensor(np.full(count, v), requires_grad=True) for v in (df, loc, scale)]
    fnn.manual_seed(32)
    fd.StudentT(*leaves).rsample().square().sum().backward()
    exact = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (df, loc, scale)]
    theirs = torch.distributions.StudentT(*exact)
    (theirs.mean.square() + theirs.variance).backward()
    for mine, other in zip(leaves, exact):
        per_draw = mine.grad.numpy()
        error = per_draw.std() / np.sqrt(count)
        assert abs(per_draw.mean() - other.grad.item()) < 5 * error, (per_draw.mean(),
                                                                      other.grad.item())


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "StudentT", "Binomial",
                                  "Gumbel", "LogNormal"])
def test_runs_on_opencl_with_cpu_values(name):
    case = CASES[name]
    rng = np.random.default_rng(33)
    params = case.params(rng, np.float32)
    value = fnn.tensor(case.values(params, rng, (3, 4) + case.event))
    on_cpu = getattr(fd, case.name)(**{k: fnn.tensor(v) for k, v in params.items()})
    with fnn.use("opencl"):
        leaves = {k: fnn.tensor(v, requires_grad=v.dtype == np.float32)
                  for k, v in params.items()}
        on_gpu = getattr(fd, case.name)(**leaves)
        draws = on_gpu.rsample((2,)) if on_gpu.has_rsample else on_gpu.sample((2,))
        assert str(draws.device).startswith("opencl")
        got = on_gpu.log_prob(value.to(draws.device))
        if on_gpu.has_rsample:
            draws.sum().backward()
            assert all(str(leaf.grad.device).startswith("opencl")
                       for leaf in leaves.values() if leaf.requires_grad)
    np.testing.assert_allclose(got.detach().numpy(), on_cpu.log_prob(value).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_student_t_moments_and_their_gradients_match_torch_on_every_df_range():
    params = {"df": np.array([0.5, 1.0, 1.5, 2.0, 2.5, 7.0]), "loc": np.linspace(-1, 1, 6),
              "scale": np.linspace(0.5, 2.0, 6)}
    ours, theirs, our_leaves, their_leaves = pair(torch, "StudentT", params)
    for mine, other in ((ours.mean, theirs.mean), (ours.variance, theirs.variance)):
        np.testing.assert_array_equal(mine.detach().numpy(), other.detach().numpy())
    finite = fnn.tensor(params["df"] > 2)
    fnn.where(finite, ours.variance + ours.mean, 0.0).sum().backward()
    torch.where(torch.tensor(params["df"] > 2), theirs.variance + theirs.mean,
                0.0).sum().backward()
    grads_close(our_leaves, their_leaves)
