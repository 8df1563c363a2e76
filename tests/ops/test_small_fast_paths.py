"""The small-tensor fast paths (x[int], x[ints and slices], x.transpose(a, b), cat, linear,
softmax) against PyTorch: values, gradients, non-contiguous inputs, odd shapes, negative
dims, views that alias, and the errors of the general path they fall back to."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from tests.ops.torch_compare import compare

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)


@pytest.mark.parametrize("key", [1, -1, (1, 2), (-2, slice(1, None)), (slice(None), 2),
                                 (slice(1, 3), slice(None, None, 2)), (0, 1, 2),
                                 (slice(5, 1),), (slice(None), slice(-2, None), -1), ()])
@pytest.mark.parametrize("transposed", [False, True])
def test_basic_index_fast_path_matches_torch(key, transposed):
    compare(lambda t: t[key], lambda t: t[key], rng.standard_normal((3, 4, 5)),
            transposed=transposed)


def test_basic_index_is_a_view_and_errors_stay_clear():
    x = fnn.tensor(np.arange(12.0).reshape(3, 4))
    row = x[1]
    row[0] = 100.0  # writes through
    assert x.numpy()[1, 0] == 100.0
    part = x[1:, 2]
    x[2, 2] = -5.0
    assert part.numpy().tolist() == [6.0, -5.0]
    with pytest.raises(IndexError, match="out of range"):
        x[3]
    with pytest.raises(IndexError, match="out of range"):
        x[0, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="bool"):
        x[True]


@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (2, 2), (-3, -1)])
def test_transpose_fast_path_matches_torch(dims):
    compare(lambda t: t.transpose(*dims), lambda t: t.transpose(*dims),
            rng.standard_normal((2, 3, 4)), transposed=True)


def test_transpose_fast_path_errors():
    x = fnn.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="out of range"):
        x.transpose(0, 2)


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("transposed", [False, True])
def test_cat_fast_path_matches_torch(dim, transposed):
    a, b, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), \
        rng.standard_normal((2, 3, 4))
    compare(lambda *t: fnn.cat(list(t), dim), lambda *t: torch.cat(list(t), dim), a, b, c,
            transposed=transposed)


def test_cat_fast_path_edges():
    x32 = fnn.tensor(np.ones((2, 2), np.float32))
    x64 = fnn.tensor(np.zeros((1, 2)))
    mixed = fnn.cat((x32, x64))  # promotes, as torch
    assert mixed.dtype == fnn.float64 and mixed.shape == (3, 2)
    empty = fnn.cat([fnn.tensor(np.zeros(0)), x32])  # the legacy 1-d empty is skipped
    assert empty.shape == (2, 2)
    with pytest.raises(ValueError, match="tensor 1 has shape"):
        fnn.cat([x32, fnn.tensor(np.ones((2, 3), np.float32))])
    with pytest.raises(IndexError):
        fnn.cat([x32, x32], 2)


def test_cat_fast_path_records_only_what_requires_grad():
    a = fnn.tensor(np.ones((2, 2)))
    b = fnn.tensor(np.full((2, 3), 2.0), requires_grad=True)
    plain = fnn.cat([a, a])
    assert plain.grad_fn is None and not plain.requires_grad
    joined = fnn.cat([a, b], 1)  # only the second input requires grad: still recorded
    weights = rng.standard_normal((2, 5))
    (joined * fnn.tensor(weights)).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), weights[:, 2:])
    with fnn.detect_anomaly(), pytest.raises(FloatingPointError):
        fnn.cat([a, fnn.tensor(np.full((2, 2), np.nan))])  # checked though nothing is taped


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,), (1, 1, 1, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_fast_path_matches_torch(shape, bias):
    x, w, b = rng.standard_normal(shape), rng.standard_normal((4, 3)), rng.standard_normal(4)
    if bias:
        compare(F.linear, torch.nn.functional.linear, x, w, b, transposed=True)
    else:
        compare(F.linear, torch.nn.functional.linear, x, w, transposed=True)


def test_linear_fast_path_errors():
    x = fnn.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="does not match weight"):
        F.linear(x, fnn.tensor(np.ones((4, 2))))
    with pytest.raises(ValueError, match="bias"):
        F.linear(x, fnn.tensor(np.ones((4, 3))), fnn.tensor(np.ones(3)))


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("transposed", [False, True])
def test_softmax_fast_path_matches_torch(dim, transposed):
    compare(lambda t: F.softmax(t, dim), lambda t: torch.softmax(t, dim),
            rng.standard_normal((3, 1, 5)) * 4, transposed=transposed)
    compare(lambda t: t.softmax(dim), lambda t: t.softmax(dim),
            rng.standard_normal((2, 3, 4)), transposed=transposed)


def test_softmax_fast_path_edges():
    x = fnn.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="out of range"):
        F.softmax(x, 2)
    assert F.softmax(fnn.tensor(np.zeros((0, 3))), 1).shape == (0, 3)
    with pytest.raises(TypeError, match="softmax: defined on floating tensors"):
        F.softmax(fnn.tensor(np.array([[1, 2]])), 1)  # as PyTorch, which has no int softmax
    ints = F.softmax(fnn.tensor(np.array([[1, 2]])), 1, dtype=fnn.float32)
    np.testing.assert_allclose(ints.numpy(), [[0.26894142, 0.73105858]], rtol=1e-6)
    big = F.softmax(fnn.tensor(np.array([[1000.0, 0.0]], np.float32)), -1)
    assert big.numpy().tolist() == [[1.0, 0.0]]
