"""F.pdist against PyTorch: pair order, p-norms, gradients (a zero distance too), errors."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from tests.ops.torch_compare import compare, torch

X = np.random.default_rng(0).normal(size=(5, 3))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_matches_torch(p):
    compare(lambda x: F.pdist(x, p), lambda x: torch.nn.functional.pdist(x, p), X,
            grad=p != 0.0)


@pytest.mark.parametrize("run", [lambda f, x: f.pdist(x, 0),
                                 lambda f, x: f.pairwise_distance(x, x.flip(0), p=0),
                                 lambda f, x: x.norm(0, dim=1)])
def test_zero_norm_counts_and_takes_part_in_backward(run):
    """p=0 counts the nonzeros; PyTorch's result requires grad (backward gives x no
    gradient), where fastnn's had left the tape and backward raised."""
    x = fnn.tensor(X, requires_grad=True)
    out = run(F, x)
    np.testing.assert_array_equal(out.detach().numpy(),
                                  run(torch.nn.functional, torch.tensor(X)).numpy())
    assert out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(X))


def test_repeated_rows_and_small_inputs():
    repeated = np.concatenate([X[:2], X[:1]])  # rows 0 and 2 equal: distance 0, gradient 0
    compare(F.pdist, torch.nn.functional.pdist, repeated)
    for rows in (0, 1):
        compare(F.pdist, torch.nn.functional.pdist, np.ones((rows, 3)), grad=False)


def test_bad_inputs_raise():
    with pytest.raises(RuntimeError, match="2D"):
        F.pdist(fnn.ones(3))
    with pytest.raises(RuntimeError, match="non-negative"):
        F.pdist(fnn.ones(3, 2), p=-1)
    with pytest.raises(RuntimeError, match="floating"):
        F.pdist(fnn.ones(3, 2, dtype=fnn.int64))
