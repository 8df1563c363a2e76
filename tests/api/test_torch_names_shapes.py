"""PyTorch's NumPy-style shape helpers (tensor_split, hsplit, hstack, tile, ravel,
sum_to_size, logspace, asarray ...): NumPy's functions as the reference, PyTorch's
values and gradients where it is installed."""

import numpy as np
import pytest

import fastnn as fnn
from tests.api.torch_names_check import check, torch

A = np.arange(24.0).reshape(2, 3, 4) / 7 - 1


def _np_tensor_split(a, spec, axis):
    return np.array_split(a, spec, axis) if isinstance(spec, int) else np.split(a, spec, axis)


SPLITS = [
    ("tensor_split", (3, 2), lambda a: _np_tensor_split(a, 3, 2)),
    ("tensor_split", (2, 1), lambda a: _np_tensor_split(a, 2, 1)),
    ("tensor_split", ([1, -1, 10], 2), lambda a: np.split(a, [1, 3, 4], 2)),
    ("hsplit", (3,), lambda a: np.hsplit(a, 3)),
    ("hsplit", ([1],), lambda a: np.hsplit(a, [1])),
    ("vsplit", (2,), lambda a: np.vsplit(a, 2)),
    ("dsplit", ([1, 3],), lambda a: np.dsplit(a, [1, 3])),
    ("split_with_sizes", ([1, 2], 1), lambda a: np.split(a, [1], 1)),
]


@pytest.mark.parametrize("name, args, reference", SPLITS,
                         ids=[f"{n}-{a}" for n, a, _ in SPLITS])
def test_splits(name, args, reference):
    check(lambda x: getattr(fnn, name)(x, *args), reference, A,
          torch_run=lambda t: getattr(torch, name)(t, *args))
    method = getattr(fnn.tensor(A), name)(*args)  # Tensor.<name> too
    assert [p.shape for p in method] == [p.shape for p in reference(A)]


def test_tensor_split_with_a_tensor_of_indices_and_a_1d_hsplit():
    pieces = fnn.tensor_split(fnn.tensor(A), fnn.tensor([1, 3]), dim=2)
    assert [p.shape for p in pieces] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    one = fnn.hsplit(fnn.arange(6.0), 3)
    assert [p.numpy().tolist() for p in one] == [[0, 1], [2, 3], [4, 5]]


def test_split_errors_name_the_op():
    with pytest.raises(ValueError, match="hsplit: dim 1 of size 3 cannot be split into 2"):
        fnn.hsplit(fnn.tensor(A), 2)
    with pytest.raises(ValueError, match="vsplit: expects a tensor with at least 2 dims"):
        fnn.vsplit(fnn.ones(4), 2)
    with pytest.raises(ValueError, match="tensor_split: the number of sections"):
        fnn.tensor_split(fnn.ones(4), 0)
    with pytest.raises(TypeError, match="tensor_split: indices_or_sections must be"):
        fnn.tensor_split(fnn.ones(4), "2")
    with pytest.raises(ValueError, match="split: sizes"):
        fnn.split_with_sizes(fnn.ones(4), [1, 2])


STACKS = {"hstack": np.hstack, "vstack": np.vstack, "row_stack": np.vstack,
          "dstack": np.dstack, "column_stack": np.column_stack}
PARTS = {"1-d": [np.arange(3.0), np.arange(3.0) * 2 - 1],
         "2-d": [np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) / 3],
         "0-d": [np.array(1.5), np.array(-2.0)]}


@pytest.mark.parametrize("name", sorted(STACKS))
@pytest.mark.parametrize("kind", sorted(PARTS))
def test_stacks(name, kind):
    parts = PARTS[kind]
    torch_name = "vstack" if name == "row_stack" else name  # row_stack: deprecated alias
    check(lambda *xs: getattr(fnn, name)(list(xs)), lambda *xs: STACKS[name](xs), *parts,
          torch_run=lambda *ts: getattr(torch, torch_name)(list(ts)))


def test_stack_errors_name_the_op():
    with pytest.raises(TypeError, match="hstack: expected a non-empty list"):
        fnn.hstack(fnn.ones(3))
    with pytest.raises(TypeError, match="vstack: expected a fastnn Tensor"):
        fnn.vstack([fnn.ones(3), [1.0, 2.0, 3.0]])


@pytest.mark.parametrize("dims", [(2,), (2, 1), (1, 2, 3), (2, 1, 1, 2)])
def test_tile_pads_counts_and_dims_as_numpy(dims):
    a = A[0]
    check(lambda x: fnn.tile(x, dims), lambda x: np.tile(x, dims), a,
          torch_run=lambda t: torch.tile(t, dims))
    np.testing.assert_array_equal(fnn.tensor(a).tile(dims).numpy(), np.tile(a, dims))


def test_ravel_reshape_as_and_ndimension():
    check(lambda x: fnn.ravel(x.transpose(0, 2)), lambda x: np.ravel(x.transpose(2, 1, 0)),
          A, torch_run=lambda t: torch.ravel(t.transpose(0, 2)))
    check(lambda x, y: x.reshape_as(y), lambda x, y: x.reshape(y.shape), A[0],
          np.zeros((4, 3)), torch_run=lambda x, y: x.reshape_as(y))
    assert fnn.tensor(A).ndimension() == 3 and fnn.tensor(1.0).ndimension() == 0


@pytest.mark.parametrize("size", [(3, 1), (1, 4), (4,), (2, 1, 4), (1, 1, 1)])
def test_sum_to_size_reduces_as_a_gradient_is_reduced(size):
    def reference(x):
        lead = x.ndim - len(size)
        out = x.sum(tuple(range(lead)))
        keep = tuple(d for d, n in enumerate(size) if n == 1 and out.shape[d] != 1)
        return out.sum(keep, keepdims=True)

    check(lambda x: x.sum_to_size(*size), reference, A,
          torch_run=lambda t: t.sum_to_size(*size))
    np.testing.assert_allclose(fnn.tensor(A).sum_to_size(size).numpy(), reference(A))


def test_sum_to_size_refuses_an_unexpandable_size():
    with pytest.raises(RuntimeError, match=r"sum_to_size: size \(2,\) is not expandable"):
        fnn.tensor(A).sum_to_size(2)


@pytest.mark.parametrize("args, kwargs", [((0, 2, 5), {}), ((-1, 1, 4), {"base": 2.0}),
                                          ((1, 3, 3), {"dtype": "float64"}),
                                          ((0, 3, 4), {"base": 2, "dtype": "int64"}),
                                          ((0, 1, 0), {})])
def test_logspace(args, kwargs):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    got = fnn.logspace(*args, **kwargs, dtype=getattr(fnn, dtype) if dtype else None)
    want = np.logspace(*args, base=kwargs.get("base", 10.0))
    np.testing.assert_allclose(got.numpy(), want.astype(dtype) if dtype else want, rtol=1e-6)
    assert got.dtype.name == (dtype or "float32")
    if torch is not None:
        theirs = torch.logspace(*args, **kwargs,
                                dtype=getattr(torch, dtype) if dtype else None)
        np.testing.assert_allclose(got.numpy(), theirs.numpy(), rtol=1e-6)
        assert str(theirs.dtype) == f"torch.{got.dtype.name}"


def test_asarray_shares_a_tensor_and_converts_the_rest():
    x = fnn.tensor([1.0, 2.0])
    assert fnn.asarray(x) is x and fnn.asarray(x, copy=True) is not x
    converted = fnn.asarray(x, dtype=fnn.float64)
    assert converted.dtype == fnn.float64 and converted.numpy().tolist() == [1.0, 2.0]
    assert fnn.asarray([1, 2]).dtype == fnn.int64
    from_numpy = fnn.asarray(np.array([0.5, 1.5]), requires_grad=True)
    assert from_numpy.dtype == fnn.float64 and from_numpy.requires_grad
    with pytest.raises(ValueError, match="asarray: copy=False"):
        fnn.asarray(x, dtype=fnn.float64, copy=False)
    if torch is not None:
        assert str(torch.asarray([1, 2]).dtype) == "torch.int64"
        assert str(torch.asarray(np.array([0.5])).dtype) == "torch.float64"
