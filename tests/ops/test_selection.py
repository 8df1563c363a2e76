"""unique, unique_consecutive, searchsorted, bucketize, nonzero, argwhere, where(cond),
where with Python scalars, masked_select, take, take_along_dim, and a tuple inside an index:
values, dtypes and gradients against PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

R = np.random.default_rng(2)
INTS = np.array([[3, 1, 3], [2, 1, 0], [3, 1, 3]])
RUNS = np.array([1, 1, 2, 2, 3, 1, 1])
NAN = float("nan")

CASES = [
    ("unique", lambda m, x: m.unique(x), (INTS,)),
    ("unique all", lambda m, x: m.unique(x, return_inverse=True, return_counts=True), (INTS,)),
    ("unique method floats", lambda m, x: x.unique(return_counts=True),
     (np.array([2.5, -1.0, 2.5, 0.0]),)),
    ("unique dim 0", lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
     (INTS,)),
    ("unique dim -1", lambda m, x: m.unique(x, return_inverse=True, dim=-1), (INTS,)),
    ("unique 0-d", lambda m, x: m.unique(x, return_inverse=True), (np.array(4),)),
    ("unique empty", lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
     (np.zeros(0),)),
    ("unique dim of an empty tensor", lambda m, x: m.unique(x, dim=0), (np.zeros((0, 3)),)),
    ("unique nan", lambda m, x: m.unique(x), (np.array([1.0, NAN, NAN]),)),
    ("unique_consecutive", lambda m, x: m.unique_consecutive(x, True, True), (RUNS,)),
    ("unique_consecutive dim", lambda m, x: x.unique_consecutive(return_counts=True, dim=0),
     (np.array([[1, 1], [1, 1], [2, 2], [1, 1]]),)),
    ("searchsorted", lambda m, s, v: m.searchsorted(s, v), (np.array([1, 3, 5, 7]),
                                                            np.array([[0, 3], [6, 9]]))),
    ("searchsorted right", lambda m, s, v: m.searchsorted(s, v, right=True),
     (np.array([1.0, 3, 3, 7]), np.array([3.0, 0, 8]))),
    ("searchsorted side int32", lambda m, s, v: m.searchsorted(s, v, side="right",
                                                                out_int32=True),
     (np.array([1, 3, 3, 7]), np.array([3]))),
    ("searchsorted n-d", lambda m, s, v: m.searchsorted(s, v),
     (np.array([[1, 3, 5], [2, 4, 6]]), np.array([[3, 0], [4, 7]]))),
    ("searchsorted sorter", lambda m, s, v, o: m.searchsorted(s, v, sorter=o),
     (np.array([5, 1, 3]), np.array([3, 6]), np.array([1, 2, 0]))),
    ("searchsorted scalar", lambda m, s: m.searchsorted(s, 4), (np.array([1, 3, 5]),)),
    ("bucketize", lambda m, x, b: m.bucketize(x, b), (np.array([[1, 3], [5, 7]]),
                                                      np.array([1, 3, 5]))),
    ("bucketize right", lambda m, x, b: m.bucketize(x, b, right=True, out_int32=True),
     (np.array([1.0, 3.5, 5.0]), np.array([1.0, 3.0, 5.0]))),
    ("nonzero", lambda m, x: m.nonzero(x), (INTS - 1,)),
    ("nonzero tuple", lambda m, x: x.nonzero(as_tuple=True), (INTS - 1,)),
    ("nonzero 0-d", lambda m, x: m.nonzero(x), (np.array(3.0),)),
    ("nonzero 0-d tuple", lambda m, x: m.nonzero(x, as_tuple=True), (np.array(3.0),)),
    ("nonzero empty", lambda m, x: m.nonzero(x), (np.zeros((0, 2)),)),
    ("argwhere", lambda m, x: m.argwhere(x), (np.array([[0.0, 1.0], [2.0, 0.0]]),)),
    ("argwhere 0-d zero", lambda m, x: x.argwhere(), (np.array(0.0),)),
    ("where one arg", lambda m, x: m.where(x > 0), (R.normal(size=(3, 4)),)),
    ("masked_select", lambda m, x: m.masked_select(x, x > 0), (R.normal(size=(3, 4)),)),
    ("masked_select bcast", lambda m, x, k: x.masked_select(k),
     (R.normal(size=(2, 3)), np.array([True, False, True]))),
    ("masked_select none", lambda m, x: m.masked_select(x, x > 100), (R.normal(size=(3,)),)),
    ("take", lambda m, x, i: m.take(x, i), (R.normal(size=(3, 4)), np.array([[0, 11], [-1, 5]]))),
    ("take repeated", lambda m, x, i: x.take(i), (R.normal(size=(2, 2)), np.array([1, 1, 3]))),
    ("take 0-d", lambda m, x, i: m.take(x, i), (np.array(1.5), np.array([0, 0]))),
    ("take_along_dim method", lambda m, x, i: x.take_along_dim(i, 1),
     (R.normal(size=(2, 3)), np.array([[0], [2]]))),
    ("take_along_dim flat", lambda m, x, i: x.take_along_dim(i),
     (R.normal(size=(2, 3)), np.array([5, 0]))),
]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_torch(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays)


@pytest.mark.parametrize("name", ["masked_select", "take", "unique dim 0", "nonzero"])
def test_non_contiguous_inputs(name):
    op, arrays = next(c[1:] for c in CASES if c[0] == name)
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays, transposed=True)


@pytest.mark.parametrize("a, b", [(1.0, 0.0), (1, 0), (True, False), (1, 0.5), (-2, 3)])
def test_where_with_two_scalars(a, b):
    cond = [True, False, True]
    got = fnn.where(fnn.tensor(cond), a, b)
    want = torch.where(torch.tensor(cond), a, b)
    assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("values", [[1.5, 2.0], [1, 2], [True, True], [3, 4]])
@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("side", [0, 1])
def test_where_with_a_python_bool_beside_a_tensor(values, flag, side):
    """where(m, x, True) (a mask completed with a bool) is refused no more: the bool is a
    0-d bool tensor beside bools, the int 0 or 1 beside numbers, as PyTorch."""
    results = []
    for lib in (fnn, torch):
        x = lib.tensor(values)
        if values == [3, 4]:
            x = x.to(lib.int32)
        pair = (x, flag) if side == 0 else (flag, x)
        got = lib.where(lib.tensor([True, False]), *pair)
        results.append((str(got.dtype).rpartition(".")[2], got.tolist()))
    assert results[0] == results[1]


KEYS = [((0,),), ((1, 0, -1), Ellipsis), (slice(None), (2, 0)), (((0, 1), (1, 0)),),
        ((0, 1), (1, 2)), (Ellipsis, (3, 0))]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_tuple_inside_an_index_is_a_list(key):
    a = np.arange(24.0).reshape(2, 3, 4)
    compare(lambda x: x[key], lambda x: x[key], a)
    mine, theirs = fnn.tensor(a), torch.tensor(a)
    mine[key] = -1.0
    theirs[key] = -1.0
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_refusals_as_torch():
    cases = [lambda m: m.searchsorted(m.tensor([1, 2]), m.tensor([1]), side="left", right=True),
             lambda m: m.searchsorted(m.tensor([[1, 2]]), m.tensor([[1], [2]])),
             lambda m: m.take(m.zeros(3), m.tensor([3])),
             lambda m: m.masked_select(m.zeros(3), m.tensor([1, 0, 1])),
             lambda m: m.bucketize(m.tensor([1]), m.tensor([[1, 2]])),
             lambda m: m.repeat_interleave(m.zeros(3), m.tensor([1, 2]))]
    for case in cases:
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(torch)
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(fnn)
