"""PyTorch's smaller composites: addbmm, addr, diagflat, diagonal_scatter, select_scatter,
slice_scatter, unravel_index, ldexp and set_printoptions, against NumPy references (and
against PyTorch, values and gradients, where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops import printing
from tests.ops.conftest import DEVICES

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4, 5))


def _numpy_cases():
    a, b1, b2 = RNG.normal(size=(4, 5)), RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 3, 5))
    v1, v2, m = RNG.normal(size=3), RNG.normal(size=4), RNG.normal(size=(3, 4))
    diag_src, sel_src, sl_src = RNG.normal(size=4), RNG.normal(size=(3, 4)), RNG.normal(
        size=(3, 2, 5))

    def diag_ref():
        out = X[0].copy()
        np.fill_diagonal(out, diag_src)
        return out

    def sel_ref():
        out = X.copy()
        out[:, :, 1] = sel_src
        return out

    def slice_ref():
        out = X.copy()
        out[:, 1::2] = sl_src
        return out

    return {
        "addbmm": (lambda F, t: F.addbmm(t(a), t(b1), t(b2), beta=0.5, alpha=2.0),
                   0.5 * a + 2.0 * np.einsum("bij,bjk->ik", b1, b2)),
        "addr": (lambda F, t: F.addr(t(m), t(v1), t(v2), alpha=3.0), m + 3.0 * np.outer(v1, v2)),
        "diagflat": (lambda F, t: F.diagflat(t(m[:2, :2]), 1), np.diag(m[:2, :2].ravel(), 1)),
        "diagonal_scatter": (lambda F, t: F.diagonal_scatter(t(X[0]), t(diag_src)), diag_ref()),
        "select_scatter": (lambda F, t: F.select_scatter(t(X), t(sel_src), 2, 1), sel_ref()),
        "slice_scatter": (lambda F, t: F.slice_scatter(t(X), t(sl_src), 1, 1, None, 2),
                          slice_ref()),
    }


CASES = _numpy_cases()


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_numpy(dev, name):
    op, want = CASES[name]
    got = op(fnn, lambda a: fnn.tensor(a, device=dev))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    op, _ = CASES[name]
    ours, theirs = [], []

    def mine(a):
        ours.append(fnn.tensor(a, requires_grad=True))
        return ours[-1]

    def their(a):
        theirs.append(torch.tensor(a, requires_grad=True))
        return theirs[-1]

    a, b = op(fnn, mine), op(torch, their)
    w = RNG.normal(size=tuple(b.shape))
    (a * fnn.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12)


def test_scatters_refuse_a_source_of_another_shape():
    with pytest.raises(RuntimeError, match=r"src must have the view's shape \(3, 4\)"):
        fnn.select_scatter(fnn.tensor(X), fnn.zeros(4, 3), 2, 1)


def test_unravel_index_is_floor_division():
    flat = np.array([0, 5, 11, -1, -12, 12, 100])
    rows, cols = fnn.unravel_index(fnn.tensor(flat), (3, 4))
    np.testing.assert_array_equal(rows.numpy(), (flat // 4) % 3)
    np.testing.assert_array_equal(cols.numpy(), flat % 4)
    assert rows.dtype is fnn.int64
    np.testing.assert_array_equal([c.numpy() for c in fnn.unravel_index(7, (2, 2, 2))],
                                  [1, 1, 1])
    with pytest.raises(TypeError, match="integer tensor"):
        fnn.unravel_index(fnn.tensor([1.0]), (2,))
    torch = pytest.importorskip("torch")
    theirs = torch.unravel_index(torch.tensor(flat), (3, 4))
    for a, b in zip((rows, cols), theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_ldexp():
    out = fnn.ldexp(fnn.tensor([1.0, 3.0, -2.0]), fnn.tensor([2, -1, 3]))
    np.testing.assert_allclose(out.numpy(), np.ldexp([1.0, 3.0, -2.0], [2, -1, 3]))
    assert fnn.ldexp(fnn.tensor([1, 3]), fnn.tensor([2, 1])).dtype is fnn.float32


def test_set_printoptions_changes_the_repr_and_profiles_reset_it():
    x = fnn.tensor([1.123456789, 300.0])
    try:
        fnn.set_printoptions(precision=2)
        assert "1.12" in repr(x) and "1.123" not in repr(x)
        fnn.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(fnn.arange(100.0))
        with pytest.raises(ValueError, match="profile must be one of"):
            fnn.set_printoptions(profile="tiny")
        fnn.set_printoptions(profile="full")
        assert "..." not in repr(fnn.arange(2000.0))
    finally:
        printing._options.clear()
    assert repr(x) == "tensor([  1.1235, 300.0000])"  # the default profile again


def test_a_0d_tensor_formats_as_its_number():
    loss = fnn.tensor(1.23456)
    assert f"{loss:.2f}" == "1.23" and f"{loss:>8.3f}" == "   1.235"
    assert f"{fnn.tensor(7):03d}" == "007"
    assert f"{fnn.tensor([1.0, 2.0])}" == str(fnn.tensor([1.0, 2.0]))  # no spec: str
    with pytest.raises(TypeError):
        f"{fnn.tensor([1.0, 2.0]):.2f}"  # noqa: B018  (as PyTorch's: only 0-d)
    torch = pytest.importorskip("torch")
    assert f"{torch.tensor(1.23456):.2f}" == f"{loss:.2f}"


def test_clip_grad_norm_returns_a_tensor_as_pytorchs():
    p = fnn.nn.Parameter(fnn.zeros(2))
    p.grad = fnn.tensor([3.0, 4.0])
    norm = fnn.nn.utils.clip_grad_norm_([p], 1.0)
    assert isinstance(norm, fnn.Tensor) and norm.ndim == 0 and norm.dtype is fnn.float32
    assert norm.item() == pytest.approx(5.0) and f"{norm:.1f}" == "5.0"
    assert fnn.nn.utils.clip_grad_norm_([fnn.nn.Parameter(fnn.zeros(2))], 1.0).item() == 0.0
