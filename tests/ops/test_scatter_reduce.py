"""scatter_reduce (every reduction, include_self), scatter(reduce=), index_put and put, out
of place and in place: values and gradients against PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
from tests.helpers import usable_or_skip
from tests.ops.torch_compare import compare, torch

R = np.random.default_rng(3)
# ties (two 5s into slot 0 of row 0), a zero in a product, an untouched slot
X = np.array([[1.0, 2.0, 3.0, -1.0], [0.5, -2.0, 4.0, 1.5]])
SRC = np.array([[5.0, 5.0, 0.0, 1.0], [2.0, -3.0, 0.0, 0.0]])
IDX = np.array([[0, 0, 1, 1], [2, 0, 2, 2]])


def _run(m, reduce, include_self, dim=1):
    def op(x, s, i):
        return m.scatter_reduce(x, dim, i, s, reduce, include_self=include_self)
    return op


CASES = []
for _reduce in ("sum", "prod", "mean", "amax", "amin"):
    for _self in (True, False):
        CASES.append((f"{_reduce} include_self={_self}", _reduce, _self))


@pytest.mark.parametrize("reduce, include_self", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_scatter_reduce_matches_torch(reduce, include_self):
    compare(_run(fnn, reduce, include_self), _run(torch, reduce, include_self), X, SRC, IDX)
    random_index = R.integers(0, 3, size=(4, 3))
    compare(_run(fnn, reduce, include_self, 0), _run(torch, reduce, include_self, 0),
            R.normal(size=(3, 3)), R.normal(size=(4, 3)), random_index, seed=1)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_integers_and_method(reduce, include_self):
    x, i, s = np.array([10, 20, 30]), np.array([0, 0, 2]), np.array([1, 2, 4])
    compare(lambda a, b, c: a.scatter_reduce(0, b, c, reduce, include_self=include_self),
            lambda a, b, c: a.scatter_reduce(0, b, c, reduce, include_self=include_self),
            x, i, s)


@pytest.mark.parametrize("reduce", ["sum", "amax", "prod"])
def test_scatter_reduce_edges(reduce):
    compare(lambda x, s, i: fnn.scatter_reduce(x, 0, i, s, reduce),
            lambda x, s, i: torch.scatter_reduce(x, 0, i, s, reduce),
            R.normal(size=(3,)), R.normal(size=(0,)), np.zeros(0, np.int64))
    compare(lambda x, s, i: fnn.scatter_reduce(x, -1, i, s, reduce),
            lambda x, s, i: torch.scatter_reduce(x, -1, i, s, reduce),
            R.normal(size=(2, 3)), R.normal(size=(2, 2)), np.array([[2, 2], [0, 1]]),
            transposed=True)


def test_scatter_reduce_max_min_spellings():
    for spelling in ("max", "min"):
        # (torch's backward refuses these spellings: the values only)
        compare(_run(fnn, spelling, True), _run(torch, spelling, True), X, SRC, IDX,
                grad=False)


def test_scatter_reduce_in_place():
    x = fnn.tensor(X.copy())
    t = torch.tensor(X.copy())
    x.scatter_reduce_(1, fnn.tensor(IDX), fnn.tensor(SRC), "amax", include_self=False)
    t.scatter_reduce_(1, torch.tensor(IDX), torch.tensor(SRC), "amax", include_self=False)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_argument(reduce):
    compare(lambda x, s, i: x.scatter(1, i, s, reduce=reduce),
            lambda x, s, i: x.scatter(1, i, s, reduce=reduce), X, SRC, IDX, grad=False)
    compare(lambda x, i: fnn.scatter(x, 1, i, value=2.5, reduce=reduce),
            lambda x, i: torch.scatter(x, 1, i, 2.5, reduce=reduce), X, IDX, grad=False)
    y = fnn.tensor(X.copy())
    y.scatter_(1, fnn.tensor(IDX), fnn.tensor(SRC), reduce=reduce)
    np.testing.assert_array_equal(
        y.numpy(), torch.tensor(X).scatter_(1, torch.tensor(IDX), torch.tensor(SRC),
                                            reduce=reduce).numpy())


PUTS = [
    ("rows", lambda m, x, v: m.index_put(x, (m.tensor([0, 2]),), v), (R.normal(size=(3, 4)),
                                                                       R.normal(size=(2, 4)))),
    ("points bcast", lambda m, x, v: x.index_put((m.tensor([[0], [2]]), m.tensor([1, 3])), v),
     (R.normal(size=(3, 4)), R.normal(size=(2,)))),
    ("accumulate repeats", lambda m, x, v: m.index_put(
        x, (m.tensor([1, 1, 0]), m.tensor([2, 2, -1])), v, accumulate=True),
     (R.normal(size=(3, 4)), R.normal(size=(3,)))),
    ("mask", lambda m, x, v: x.index_put((m.tensor([True, False, True]),), v, True),
     (R.normal(size=(3, 2)), R.normal(size=(2,)))),
    ("put", lambda m, x, s: m.put(x, m.tensor([0, -2, 5]), s), (R.normal(size=(2, 3)),
                                                                R.normal(size=(3,)))),
    ("put accumulate", lambda m, x, s: x.put(m.tensor([[1, 1]]), s, accumulate=True),
     (R.normal(size=(2, 3)), R.normal(size=(1, 2)))),
]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in PUTS], ids=[c[0] for c in PUTS])
def test_index_put_and_put_match_torch(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays)


def test_in_place_puts():
    for name, args in (("index_put_", lambda m: ((m.tensor([0, 0]), m.tensor([1, 1])),
                                                 m.tensor([1.0, 2.0]), True)),
                       ("put_", lambda m: (m.tensor([3, 0]), m.tensor([7.0, 8.0])))):
        x, t = fnn.zeros(2, 2), torch.zeros(2, 2)
        view, tview = x[:, :], t[:, :]
        getattr(view, name)(*args(fnn))
        getattr(tview, name)(*args(torch))
        np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_refusals_as_torch():
    cases = [lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0]), m.zeros(1), "foo"),
             lambda m: m.zeros(3).scatter_reduce(0, m.tensor([3]), m.zeros(1), "sum"),
             lambda m: m.zeros(3).put(m.tensor([0, 1]), m.zeros(3)),
             lambda m: m.zeros(3).put(m.tensor([3]), m.zeros(1)),
             lambda m: m.zeros(3).index_put((m.tensor([0]), m.tensor([0])), m.zeros(1)),
             lambda m: m.zeros(3).index_put((m.tensor([0]),), m.zeros(1, dtype=m.float64)),
             lambda m: m.zeros(2, 2).scatter(0, m.tensor([[0]]), m.zeros(1, 1), reduce="max")]
    for case in cases:
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(torch)
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(fnn)


def test_scatter_takes_a_number_as_its_third_argument_as_torch():
    """torch's ``scatter(dim, index, value)`` overload: a number where src goes (it raised
    "source must be a Tensor")."""
    one_hot = np.array([[0], [2]])
    compare(lambda x, i: x.scatter(1, i, 1.5), lambda x, i: x.scatter(1, i, 1.5),
            np.zeros((2, 4)), one_hot, grad=False)
    compare(lambda x, i: fnn.scatter(x, 1, i, 2), lambda x, i: torch.scatter(x, 1, i, 2),
            np.zeros((2, 4)), one_hot, grad=False)
    y, t = fnn.zeros((2, 4)), torch.zeros((2, 4))
    y.scatter_(1, fnn.tensor(one_hot), 1.0)
    t.scatter_(1, torch.tensor(one_hot), 1.0)
    np.testing.assert_array_equal(y.numpy(), t.numpy())
    with pytest.raises(TypeError, match="exactly one of src"):
        y.scatter(1, fnn.tensor(one_hot), 1.0, value=2.0)


REPEATS = np.array([[0, 0, 2], [1, 3, 1]])  # slot 0 of row 0 and slot 1 of row 1 twice


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_scatter_with_repeated_indices_keeps_the_last_write_as_torch(device):
    # scatter_(1, idx, 1.0), the one-hot idiom, wrote 2.0 where idx repeats (the writes
    # were summed); now the last write stays, as on PyTorch's CPU
    usable_or_skip(device)
    x = np.arange(8.0).reshape(2, 4)
    src = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    want = x.copy()
    for (i, j), k in np.ndenumerate(REPEATS):
        want[i, k] = src[i, j]
    with fnn.use(device):
        got = fnn.tensor(x).scatter(1, fnn.tensor(REPEATS), fnn.tensor(src))
        np.testing.assert_array_equal(got.numpy(), want)
        ones = fnn.zeros(2, 4)
        ones.scatter_(1, fnn.tensor(REPEATS), 1.0)
        np.testing.assert_array_equal(ones.numpy(), [[1, 0, 1, 0], [0, 1, 0, 1]])
        copied = fnn.zeros(2, 4).index_copy(1, fnn.tensor([3, 3]), fnn.tensor(src[:, :2]))
        np.testing.assert_array_equal(copied.numpy(), [[0, 0, 0, 2], [0, 0, 0, 5]])


def test_scatter_with_repeated_indices_matches_torch():
    compare(lambda x, s, i: x.scatter(1, i, s), lambda x, s, i: x.scatter(1, i, s),
            X, SRC[:, :3], REPEATS, grad=False)
    compare(lambda x, i: x.scatter(0, i, 1.5), lambda x, i: x.scatter(0, i, 1.5),
            X, np.array([[1, 1, 0, 1], [1, 0, 0, 1]]), grad=False)
    compare(lambda x, s, i: x.index_copy(0, i, s), lambda x, s, i: x.index_copy(0, i, s),
            X, SRC, np.array([1, 1]), grad=False)
