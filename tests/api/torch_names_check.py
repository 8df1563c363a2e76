"""One check for the PyTorch-named ops of tests/api/test_torch_names_*.py: fastnn's
result against a NumPy float64 reference always, and against PyTorch's (values, dtype,
and the gradient of sum(out * w)) where PyTorch is installed."""

import numpy as np

import fastnn as fnn

try:
    import torch
except ImportError:
    torch = None


def as_numpy(result):
    return result.numpy() if isinstance(result, fnn.Tensor) else np.asarray(result)


def check(run, reference, *arrays, torch_run=None, grad=True, rtol=1e-6, atol=1e-9):
    """``run(*fastnn tensors)`` equals ``reference(*arrays)`` (NumPy float64); with
    PyTorch, ``torch_run`` (default: ``run``) on torch tensors gives the same values,
    dtype and gradients. Float arrays become leaves that require grad when ``grad``."""
    leaves = [fnn.tensor(a, requires_grad=grad and a.dtype.kind == "f")
              if isinstance(a, np.ndarray) else a for a in arrays]
    got = run(*leaves)
    pieces = list(got) if isinstance(got, (tuple, list)) else [got]
    expected = reference(*arrays)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(pieces) == len(expected)
    for g, e in zip(pieces, expected):
        assert as_numpy(g).shape == np.shape(e), (as_numpy(g).shape, np.shape(e))
        np.testing.assert_allclose(as_numpy(g).astype(np.float64), e, rtol=rtol, atol=atol,
                                   equal_nan=True)
    if torch is None:
        return pieces
    mine = [fnn.tensor(a, requires_grad=grad and a.dtype.kind == "f")
            if isinstance(a, np.ndarray) else a for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f")
              if isinstance(a, np.ndarray) else a for a in arrays]
    got = run(*mine)
    want = (torch_run or run)(*theirs)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    rng = np.random.default_rng(0)
    total_mine = total_theirs = None
    for g, w in zip(got, want):
        assert str(g.dtype).rpartition(".")[2] == str(w.dtype).rpartition(".")[2]
        np.testing.assert_allclose(as_numpy(g), w.detach().numpy(), rtol=rtol, atol=atol,
                                   equal_nan=True)
        if w.requires_grad and g.requires_grad:
            weight = rng.normal(size=tuple(w.shape))
            defined = ~np.isnan(w.detach().numpy())  # NaN results pass no gradient here
            a = fnn.where(fnn.tensor(defined), g, 0.0) * fnn.tensor(weight)
            b = torch.where(torch.tensor(defined), w, 0.0) * torch.tensor(weight)
            total_mine = a.sum() if total_mine is None else total_mine + a.sum()
            total_theirs = b.sum() if total_theirs is None else total_theirs + b.sum()
    if total_mine is not None:
        total_mine.backward()
        total_theirs.backward()
        for m, t in zip(mine, theirs):
            if isinstance(m, fnn.Tensor) and m.requires_grad:
                assert (m.grad is None) == (t.grad is None)
                if m.grad is not None:
                    np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-5,
                                               atol=1e-9)
    return pieces
