"""fastnn.ops.differences: torch.gradient against PyTorch's values, dtypes and gradients
(spacing as a number, one number per dim, or sample points; edge orders 1 and 2)."""

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")

F = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
POINTS = [np.array([0.0, 1.0, 2.5, 3.0]), np.array([0.0, 0.5, 1.0, 3.0, 4.0])]
CASES = [dict(), dict(spacing=2.0), dict(spacing=[2.0, 0.5]), dict(dim=1),
         dict(dim=(1, 0), spacing=[1.0, 3.0]), dict(edge_order=2), dict(spacing="points"),
         dict(spacing="points", edge_order=2), dict(dim=-1, spacing=[1.5])]


@pytest.mark.parametrize("kwargs", CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_matches_torch(kwargs, dtype):
    results = []
    for module in (torch, fnn):
        x = module.tensor(F.astype(dtype), requires_grad=True)
        given = dict(kwargs)
        if given.get("spacing") == "points":
            given["spacing"] = [module.tensor(p) for p in POINTS]
        out = module.gradient(x, **given)
        sum((o * o).sum() for o in out).backward()
        results.append((out, x.grad))
    (ours, our_grad), (theirs, their_grad) = results[1], results[0]
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype.name == str(t.dtype).rpartition(".")[2]
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(our_grad.numpy(), their_grad.numpy(), rtol=1e-5, atol=1e-5)


def test_gradient_of_integers_and_bad_arguments():
    ours = fnn.gradient(fnn.tensor([1, 4, 9, 16]), spacing=2)[0]
    theirs = torch.gradient(torch.tensor([1, 4, 9, 16]), spacing=2)[0]
    assert ours.dtype == fnn.float32 and ours.tolist() == theirs.tolist()
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        fnn.gradient(fnn.tensor([1.0, 2.0]), edge_order=2)
    with pytest.raises(RuntimeError, match="edge_order=1 and edge_order=2"):
        fnn.gradient(fnn.tensor([1.0, 2.0, 3.0]), edge_order=3)
    with pytest.raises(RuntimeError, match="spacing"):
        fnn.gradient(fnn.zeros(3, 3), spacing=[1.0, 2.0, 3.0])
