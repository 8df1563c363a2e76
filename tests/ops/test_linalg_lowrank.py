"""fnn.svd_lowrank and fnn.pca_lowrank against PyTorch's: on matrices of rank at most q the
randomized SVD is the SVD itself, so singular values, reconstructions, projectors and
gradients agree whatever the random sketch (each library draws its own)."""

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(5)


def low_rank(*batch, m, n, rank):
    return rng.normal(size=batch + (m, rank)) @ rng.normal(size=batch + (rank, n))


def _both(fn, a):
    """fn(lib, leaf) for fastnn and PyTorch, with their leaves."""
    x, t = fnn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    return (fn(fnn, x), x), (fn(torch, t), t)


def _same_factors(ours, theirs, rank):
    (U, S, V), (tU, tS, tV) = ours, theirs
    assert (U.shape, S.shape, V.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tV.shape))
    assert U.dtype == fnn.float64
    np.testing.assert_allclose(S.detach().numpy(), tS.detach().numpy(), atol=1e-9)
    # singular vectors of the nonzero values: the same up to sign, so the same projectors
    u, tu = U.detach().numpy()[..., :rank], tU.detach().numpy()[..., :rank]
    v, tv = V.detach().numpy()[..., :rank], tV.detach().numpy()[..., :rank]
    np.testing.assert_allclose(u @ np.swapaxes(u, -1, -2), tu @ np.swapaxes(tu, -1, -2),
                               atol=1e-9)
    np.testing.assert_allclose(v @ np.swapaxes(v, -1, -2), tv @ np.swapaxes(tv, -1, -2),
                               atol=1e-9)


@pytest.mark.parametrize("shape", [(30, 12), (12, 30), (2, 20, 9)],
                         ids=["tall", "wide", "batched"])
def test_svd_lowrank_of_a_low_rank_matrix_is_its_svd_as_pytorchs(shape):
    a = low_rank(*shape[:-2], m=shape[-2], n=shape[-1], rank=3)
    (ours, x), (theirs, t) = _both(lambda lib, v: lib.svd_lowrank(v, q=5), a)
    _same_factors(ours, theirs, 3)
    U, S, V = ours
    rebuilt = U @ fnn.diag_embed(S) @ V.mT
    np.testing.assert_allclose(rebuilt.detach().numpy(), a, atol=1e-9)
    S[..., :3].sum().backward()
    theirs[1][..., :3].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-9)


def test_svd_lowrank_of_a_minus_m_as_pytorchs():
    a = low_rank(m=25, n=10, rank=2) + 1.5
    mean = a.mean(0, keepdims=True)

    def run(lib, v):
        return lib.svd_lowrank(v, q=4, niter=1, M=lib.tensor(mean))

    (ours, _), (theirs, _) = _both(run, a)
    _same_factors(ours, theirs, 2)


@pytest.mark.parametrize("kwargs", [{}, {"q": 4}, {"center": False, "q": 4}])
def test_pca_lowrank_as_pytorchs(kwargs):
    # rank 3 about a mean row: rank 3 centred, rank 4 (the mean too) uncentred
    data = low_rank(m=40, n=8, rank=3) + rng.normal(size=8)
    (ours, _), (theirs, _) = _both(lambda lib, v: lib.pca_lowrank(v, **kwargs), data)
    _same_factors(ours, theirs, 3 if kwargs.get("center", True) else 4)


def test_pca_lowrank_refuses_a_q_above_min_m_n():
    with pytest.raises(ValueError, match="min\\(m, n\\)=4"):
        fnn.pca_lowrank(fnn.ones(10, 4), q=5)
    with pytest.raises(ValueError, match="niter"):
        fnn.svd_lowrank(fnn.ones(10, 4), niter=-1)
