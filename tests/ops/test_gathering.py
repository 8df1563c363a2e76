"""gather, scatter_add, index_select, take_along_dim, F.embedding, F.one_hot against NumPy
float64 and PyTorch (forward and gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4, 5))


def test_gather_and_its_gradient_is_a_scatter_add(device):
    index = rng.integers(0, 4, (3, 6, 2))  # smaller than x in dim 2: x is cropped there
    x = fnn.tensor(X, device=device, requires_grad=True)
    out = x.gather(1, fnn.tensor(index, device=device))
    want = np.take_along_axis(X[:, :, :2], index, 1)
    np.testing.assert_array_equal(out.numpy(), want)
    w = rng.standard_normal(want.shape)
    (out * fnn.tensor(w, device=device)).sum().backward()
    grad = np.zeros_like(X)
    i, _, k = np.indices(index.shape, sparse=True)
    np.add.at(grad, (np.broadcast_to(i, index.shape), index, np.broadcast_to(k, index.shape)), w)
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-12)


def test_scatter_add_accumulates_repeats(device):
    base = fnn.tensor(np.zeros((2, 3)), device=device, requires_grad=True)
    src = fnn.tensor(np.arange(8.0).reshape(2, 4), device=device, requires_grad=True)
    index = fnn.tensor(np.array([[0, 0, 2, 0], [1, 1, 1, 1]]), device=device)
    out = base.scatter_add(1, index, src)
    np.testing.assert_array_equal(out.numpy(), [[0 + 1 + 3, 0, 2], [0, 4 + 5 + 6 + 7, 0]])
    (out * fnn.tensor(np.arange(6.0).reshape(2, 3), device=device)).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[0, 0, 2, 0], [4, 4, 4, 4]])
    np.testing.assert_array_equal(base.grad.numpy(), np.arange(6.0).reshape(2, 3))


def test_against_torch():
    torch = pytest.importorskip("torch")
    index = rng.integers(0, 3, (2, 4, 5))
    src = rng.standard_normal((2, 4, 5))
    x = fnn.tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    ours = x.scatter_add(0, fnn.tensor(index), fnn.tensor(src)) * 2 + x.gather(0, fnn.tensor(
        index)).sum()
    theirs = t.scatter_add(0, torch.tensor(index), torch.tensor(src)) * 2 + t.gather(
        0, torch.tensor(index)).sum()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    sel = [2, 0, 2]
    np.testing.assert_array_equal(x.index_select(2, fnn.tensor(sel)).numpy(),
                                  t.index_select(2, torch.tensor(sel)).detach().numpy())
    idx = rng.integers(0, 5, (3, 4, 1))
    np.testing.assert_array_equal(fnn.take_along_dim(x, fnn.tensor(idx), dim=2).numpy(),
                                  torch.take_along_dim(t, torch.tensor(idx), 2).detach().numpy())


def test_take_along_dim_broadcasts_and_flattens(device):
    x = fnn.tensor(X, device=device)
    idx = np.argsort(X, axis=1)[:, :2, :1]
    np.testing.assert_array_equal(fnn.take_along_dim(x, fnn.tensor(idx, device=device),
                                                     dim=1).numpy(),
                                  np.take_along_axis(X, idx, 1))
    flat = np.array([0, 59, -1])
    np.testing.assert_array_equal(fnn.take_along_dim(x, fnn.tensor(flat, device=device))
                                  .numpy(), X.ravel()[flat])


def test_embedding_and_padding_idx(device):
    weight = fnn.tensor(rng.standard_normal((6, 3)), device=device, requires_grad=True)
    ids = fnn.tensor(np.array([[1, 0, 1], [5, 0, 2]]), device=device)
    out = F.embedding(ids, weight, padding_idx=0)
    np.testing.assert_array_equal(out.numpy(), weight.numpy()[ids.numpy()])
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy()[:, 0], [0, 2, 1, 0, 0, 1])
    hot = F.one_hot(ids, 6)
    np.testing.assert_array_equal(hot.numpy(), np.eye(6)[ids.numpy()])


def test_one_hot_is_int64_as_pytorch(device):
    torch = pytest.importorskip("torch")
    labels = np.array([[2, 0], [1, 3]])
    hot = F.one_hot(fnn.tensor(labels, device=device), 5)
    want = torch.nn.functional.one_hot(torch.tensor(labels), 5)
    assert hot.dtype == fnn.int64 and str(want.dtype) == "torch.int64"
    np.testing.assert_array_equal(hot.numpy(), want.numpy())
    inferred = F.one_hot(fnn.tensor(labels, device=device))  # num_classes=-1: max + 1
    np.testing.assert_array_equal(inferred.numpy(), torch.nn.functional.one_hot(
        torch.tensor(labels)).numpy())
    assert F.one_hot(fnn.tensor(labels), 4, dtype=fnn.float32).dtype == fnn.float32


# PyTorch counts a 0-d self, index or src of the gather/scatter family as one element along
# dim 0: the transforms tutorial one-hot encodes with zeros(10).scatter_(0, tensor(y), value=1)
ZERO_D = {
    "scatter_ value": (lambda L: L.zeros(5).scatter_(0, L.tensor(3), value=1), [0, 0, 0, 1, 0]),
    "scatter src": (lambda L: L.zeros(5).scatter(0, L.tensor(3), L.tensor([5.0, 6.0])),
                    [0, 0, 0, 5, 0]),
    "scatter 0-d self": (lambda L: L.tensor(4.0).scatter(-1, L.tensor(0), 1.0), 1.0),
    "scatter_add": (lambda L: L.zeros(3).scatter_add(0, L.tensor(1), L.tensor(5.0)), [0, 5, 0]),
    "scatter_add 0-d self": (lambda L: L.tensor(4.0).scatter_add(0, L.tensor([0, 0]),
                                                                  L.tensor([1.0, 2.0])), 7.0),
    "scatter_reduce": (lambda L: L.ones(3).scatter_reduce(0, L.tensor(2), L.tensor(5.0), "prod"),
                       [1, 1, 5]),
    "gather": (lambda L: L.arange(5.0).gather(0, L.tensor(3)), 3.0),
    "gather 0-d self": (lambda L: L.tensor(4.0).gather(0, L.tensor([0, 0])), [4, 4]),
}


@pytest.mark.parametrize("name", ZERO_D)
def test_zero_d_operands_count_as_one_element(device, name):
    build, want = ZERO_D[name]
    with fnn.use(device):
        out = build(fnn)
    assert out.shape == np.shape(want)
    np.testing.assert_array_equal(out.numpy(), want)
    torch = pytest.importorskip("torch")
    theirs = build(torch)
    assert tuple(theirs.shape) == out.shape
    np.testing.assert_array_equal(theirs.numpy(), out.numpy())


def test_zero_d_index_gradients():
    w = fnn.ones(3, requires_grad=True)
    (w.gather(0, fnn.tensor(1)) * 3).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0, 3, 0])
    v = fnn.tensor(2.0, requires_grad=True)
    fnn.zeros(3).scatter(0, fnn.tensor(1), v).sum().backward()
    assert v.grad.item() == 1.0


def test_zero_d_index_into_a_matrix_still_raises():
    with pytest.raises(ValueError, match="index has 0 dims"):
        fnn.zeros(2, 3).scatter(0, fnn.tensor(1), 1.0)


@pytest.mark.parametrize("call,error,match", [
    (lambda x: x.gather(1, fnn.tensor(np.array([[[4]]]))), IndexError,
     "gather: index 4 is out of range for an axis of size 4"),
    (lambda x: x.gather(1, fnn.tensor(np.array([[[-1]]]))), IndexError, "valid: 0 to 3"),
    (lambda x: x.gather(1, fnn.tensor(np.zeros((3, 4)), dtype=fnn.int64)), ValueError,
     "index has 2 dims but x has 3"),
    (lambda x: x.gather(1, fnn.tensor(np.zeros((4, 1, 1), np.int64))), ValueError,
     "larger than x's size 3"),
    (lambda x: x.gather(1, fnn.tensor(np.zeros((1, 1, 1)))), TypeError, "must be an int64"),
    (lambda x: x.index_select(0, fnn.tensor(np.array([3]))), IndexError, "out of range"),
    (lambda x: F.embedding(fnn.tensor(np.array([7])), x[0]), IndexError, "embedding"),
])
def test_errors_name_the_op_and_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call(fnn.tensor(X))


@pytest.mark.parametrize("kind", ["list", "numpy", "cpu tensor"])
def test_host_data_indices_are_range_checked_on_every_device(device, kind):
    # issue 25: on opencl an index given as host data was uploaded before the check, which
    # runs on the host only, so it read 0 instead of raising
    x = fnn.arange(6.0).reshape(2, 3).to(device)
    ones = fnn.ones((1, 1), device=device)

    def index(values):
        if kind == "list":
            return values
        return np.array(values) if kind == "numpy" else fnn.tensor(values)

    calls = {
        "index_select": lambda: x.index_select(1, index([0, 3])),
        "gather": lambda: x.gather(1, index([[3]])),
        "scatter_add": lambda: x.scatter_add(1, index([[3]]), ones),
        "take_along_dim": lambda: fnn.take_along_dim(x, index([[-4]]), 1),
        "embedding": lambda: fnn.functional.embedding(index([1, 3]), x.T),
        # the scattering composites (fastnn/ops/scattering.py) take their index the same way
        "index_add": lambda: x.index_add(1, index([3]), ones.expand(2, 1)),
        "index_copy": lambda: x.index_copy(1, index([3]), ones.expand(2, 1)),
        "index_fill": lambda: x.index_fill(1, index([0, 3]), 2.0),
        "scatter": lambda: x.scatter(1, index([[3]]), value=1.0),
    }
    for op, call in calls.items():
        with pytest.raises(IndexError, match=rf"{op}\w*: index -?[34] is out of range for an "
                                             "axis of size 3"):
            call()
