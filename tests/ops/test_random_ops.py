"""fnn.Generator and the samplers (multinomial, bernoulli, normal, poisson, randperm,
randint_like): determinism under fnn.manual_seed and under a Generator's seed and state,
shapes and dtypes as PyTorch's, the distributions' moments, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


def _draws(seed_call, draw):
    seed_call()
    return draw().numpy()


SAMPLERS = {
    "multinomial": lambda g: fnn.multinomial(fnn.tensor([[0.2, 0.0, 0.8], [1.0, 1.0, 1.0]]), 2,
                                             generator=g),
    "multinomial_replace": lambda g: fnn.tensor([1.0, 2.0, 3.0]).multinomial(
        20, replacement=True, generator=g),
    "bernoulli": lambda g: fnn.bernoulli(fnn.full((4, 5), 0.3), generator=g),
    "normal": lambda g: fnn.normal(fnn.zeros(6), fnn.ones(6), generator=g),
    "normal_size": lambda g: fnn.normal(1.0, 2.0, (3, 2), generator=g),
    "poisson": lambda g: fnn.poisson(fnn.full((5,), 4.0), g),
    "binomial": lambda g: fnn.binomial(fnn.full((5,), 9.0), fnn.full((5,), 0.3), g),
    "randperm": lambda g: fnn.randperm(10, generator=g),
    "randint_like": lambda g: fnn.randint_like(fnn.zeros(8), 0, 100, generator=g),
    "randn": lambda g: fnn.randn(5, generator=g),
    "rand": lambda g: fnn.rand(5, generator=g),
    "randint": lambda g: fnn.randint(0, 9, (5,), generator=g),
    # the in-place fills take generator= too, as PyTorch's x.normal_(0, 1, generator=g)
    "normal_": lambda g: fnn.zeros(5).normal_(1.0, 2.0, generator=g),
    "uniform_": lambda g: fnn.zeros(5).uniform_(-1.0, 1.0, generator=g),
    "bernoulli_": lambda g: fnn.zeros(20).bernoulli_(0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seeded_draws_repeat(name):
    draw = SAMPLERS[name]
    first = _draws(lambda: fnn.manual_seed(7), lambda: draw(None))
    again = _draws(lambda: fnn.manual_seed(7), lambda: draw(None))
    np.testing.assert_array_equal(first, again)
    g = fnn.Generator().manual_seed(7)
    mine = draw(g).numpy()
    state = g.get_state()
    later = draw(g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(draw(g).numpy(), later)
    np.testing.assert_array_equal(draw(fnn.Generator().manual_seed(7)).numpy(), mine)
    # a generator of its own leaves the default one's sequence alone
    fnn.manual_seed(3)
    plain = fnn.randn(4).numpy()
    fnn.manual_seed(3)
    draw(fnn.Generator().manual_seed(1))
    np.testing.assert_array_equal(fnn.randn(4).numpy(), plain)


def test_global_state_functions():
    fnn.manual_seed(11)
    assert fnn.initial_seed() == 11
    state = fnn.get_rng_state()
    first = fnn.randn(3).numpy()
    fnn.set_rng_state(state)
    np.testing.assert_array_equal(fnn.randn(3).numpy(), first)
    g = fnn.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert isinstance(g.seed(), int)
    with pytest.raises(TypeError, match="generator must be"):
        fnn.randperm(3, generator=42)


def test_shapes_dtypes_and_moments():
    fnn.manual_seed(0)
    counts = fnn.multinomial(fnn.tensor([1.0, 3.0]), 4000, replacement=True).numpy()
    assert counts.dtype == np.int64 and abs(counts.mean() - 0.75) < 0.03
    rows = fnn.multinomial(fnn.tensor([[1.0, 1.0, 0.0, 1.0]] * 50), 3).numpy()
    assert rows.shape == (50, 3)
    assert all(sorted(r) == [0, 1, 3] for r in rows)  # without replacement: each once
    flips = fnn.bernoulli(fnn.full((4000,), 0.25, dtype=fnn.float64))
    assert flips.dtype is fnn.float64 and abs(flips.numpy().mean() - 0.25) < 0.03
    assert set(np.unique(fnn.bernoulli(fnn.zeros(50), p=0.5).numpy())) == {0.0, 1.0}
    mean, std = fnn.full((2, 1), 3.0), fnn.full((4000,), 2.0)
    samples = fnn.normal(mean, std).numpy()
    assert samples.shape == (2, 4000)
    assert abs(samples.mean() - 3) < 0.1 and abs(samples.std() - 2) < 0.1
    assert fnn.normal(0.0, 1.0, (2, 3), dtype=fnn.float64).dtype is fnn.float64
    rates = fnn.poisson(fnn.full((4000,), 4.0)).numpy()
    assert abs(rates.mean() - 4) < 0.15 and abs(rates.var() - 4) < 0.5
    assert sorted(fnn.randperm(20).numpy()) == list(range(20))
    assert fnn.randperm(0).shape == (0,)
    ints = fnn.randint_like(fnn.zeros(500, dtype=fnn.int32), 3, 6)
    assert ints.dtype is fnn.int32 and set(np.unique(ints.numpy())) == {3, 4, 5}


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="without replacement"):
        fnn.multinomial(fnn.tensor([1.0, 0.0]), 2)
    with pytest.raises(ValueError, match="sum to 0"):
        fnn.multinomial(fnn.zeros(3), 1)
    with pytest.raises(ValueError, match=">= 0"):
        fnn.multinomial(fnn.tensor([1.0, -1.0]), 1)
    with pytest.raises(ValueError, match="probabilities must be in"):
        fnn.bernoulli(fnn.tensor([0.5, 2.0]))
    with pytest.raises(ValueError, match="std must be >= 0"):
        fnn.normal(fnn.zeros(2), -1.0)
    with pytest.raises(ValueError, match="rates"):
        fnn.poisson(fnn.tensor([-1.0]))
    with pytest.raises(ValueError, match="prob must be in"):
        fnn.binomial(fnn.tensor([3.0]), fnn.tensor([1.5]))
    with pytest.raises(RuntimeError, match="one dtype"):
        fnn.binomial(fnn.tensor([3.0], dtype=fnn.float64), fnn.tensor([0.5]))


def test_against_torch_api_where_installed():
    torch = pytest.importorskip("torch")
    for name in ("multinomial", "bernoulli", "normal", "poisson", "randperm", "randint_like",
                 "rand_like", "randn_like", "Generator", "seed", "initial_seed",
                 "get_rng_state", "set_rng_state"):
        assert hasattr(torch, name) and hasattr(fnn, name), name
    assert fnn.multinomial(fnn.ones(2, 5), 3).shape == tuple(torch.multinomial(
        torch.ones(2, 5), 3).shape)
    assert str(torch.poisson(torch.ones(2)).dtype) == "torch.float32"
    assert fnn.poisson(fnn.ones(2)).dtype is fnn.float32
    # torch.binomial (count, prob): broadcast, in their dtype, a binomial's mean
    for lib in (torch, fnn):
        draws = lib.binomial(lib.full((2, 1), 10.0, dtype=lib.float64),
                             lib.tensor([0.2, 0.7] * 2000, dtype=lib.float64))
        assert tuple(draws.shape) == (2, 4000) and draws.dtype == lib.float64
        values = draws.numpy()
        assert abs(values[:, ::2].mean() - 2.0) < 0.1 and abs(values[:, 1::2].mean() - 7.0) < 0.1
        assert values.min() >= 0 and values.max() <= 10 and np.all(values == np.round(values))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float64"])
def test_bernoulli_fills_any_dtype_as_torch(dtype):
    torch = pytest.importorskip("torch")
    theirs = torch.zeros(400, dtype=getattr(torch, dtype)).bernoulli_(0.5)
    ours = fnn.zeros(400, dtype=getattr(fnn, dtype)).bernoulli_(0.5)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    assert set(np.unique(ours.numpy()).tolist()) == {0, 1}


def test_nn_init_takes_a_generator():
    first, second = fnn.zeros(3, 4), fnn.zeros(3, 4)
    fnn.nn.init.normal_(first, generator=fnn.Generator().manual_seed(9))
    fnn.nn.init.normal_(second, generator=fnn.Generator().manual_seed(9))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert first.numpy().std() > 0
