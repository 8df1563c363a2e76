"""x[key] and x[key] = v against NumPy float64 (values and, by a scatter of the selected
positions, gradients) and against PyTorch where it is installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn

X = np.random.default_rng(0).standard_normal((4, 5, 6))
IDX = np.array([3, 0, 0, -1])  # repeats and a negative index

KEYS = [
    2, -1, (1, 2), (slice(1, 3),), (slice(None, None, 2), 1), (Ellipsis, 3), (None, 1),
    (slice(None), None, slice(1, 4, 2)), (Ellipsis, None), (1, Ellipsis, slice(0, 6, 4)),
    (slice(4, 0, -1),), (slice(None), slice(None, None, -2)), (slice(7, 9),), (slice(2, 2),),
    (IDX,), (slice(None), [1, 1, 4]), (IDX, slice(None), [0, 1, 2, 5]), (IDX, [1, 1, 2, 2]),
    (IDX, 2), (slice(None), IDX[:, None], [[0, 5]]), (Ellipsis, IDX), (0, IDX),
    (X[:, 0, 0] > 0,), (X[:, :, 0] > 0,), (X > 0.5,), (slice(None), X[0, :, 0] > 0, 1),
    ([[0, 1], [2, 3]], slice(1, 3), [[4], [5]]), (None, IDX, None, slice(0, 2)),
]


def _grad_ref(key, weights):
    positions = np.arange(X.size).reshape(X.shape)[key]
    return np.bincount(positions.ravel(), weights.ravel(), X.size).reshape(X.shape)


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in range(len(KEYS))])
def test_getitem_matches_numpy_with_gradients(device, key):
    key = KEYS[key] if isinstance(key, int) and not isinstance(KEYS[0], int) else key
    x = fnn.tensor(X, device=device, requires_grad=True)
    want = X[key]
    out = x[key]
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.numpy(), want)
    weights = np.random.default_rng(1).standard_normal(want.shape)
    (out * fnn.tensor(weights, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _grad_ref(key, weights), rtol=1e-12,
                               atol=1e-12)


def test_an_int_is_basic_indexing_as_in_pytorch(device):
    # NumPy counts the int as advanced and puts the indexed axes in front: (4, 5)
    x = fnn.tensor(X, device=device)
    np.testing.assert_array_equal(x[0, :, IDX].numpy(), X[0][:, IDX])


def test_index_tensors_and_views(device):
    x = fnn.tensor(X, device=device)
    index = fnn.tensor(IDX, device=device)
    np.testing.assert_array_equal(x[index, 1:3].numpy(), X[IDX, 1:3])
    assert x[1].shape == (5, 6) and x[1, 2, 3].shape == ()
    if device == "cpu":  # basic indexing is a view of the same memory on strided backends
        assert np.shares_memory(x[1:3, ::2]._data, x._data)


def test_a_cpu_index_tensor_indexes_a_device_tensor(device):
    x = fnn.tensor(X, device=device)
    np.testing.assert_array_equal(x[fnn.tensor(IDX)].numpy(), X[IDX])
    np.testing.assert_array_equal(x[:, fnn.tensor(IDX)].numpy(), X[:, IDX])


def test_torch_agrees_on_mixed_indexing():
    torch = pytest.importorskip("torch")
    t = torch.tensor(X)
    x = fnn.tensor(X)
    for key in [(IDX, slice(None), [0, 1, 2, 5]), (0, slice(None), IDX), (slice(None), IDX[:, None],
                                                                      [[0, 5]]),
                ([[0, 1], [2, 3]], slice(1, 3), [[4], [5]]), (X > 0.5,)]:
        tkey = tuple(torch.tensor(k) if isinstance(k, (list, np.ndarray)) else k for k in key)
        np.testing.assert_array_equal(x[key].numpy(), t[tkey].numpy())


# a list that holds sequences, tensors, slices, ... or None: the tuple of its items, as PyTorch
# (NumPy's rule before 1.23), with PyTorch's deprecation warning; a list of ints stays one index
LIST_KEYS = [[[0, 1], [1, 0]], [[0, 2]], [(0, 1), (1, 0)], [0, [1, 2]], [slice(0, 2), 1],
             [None, 0], [Ellipsis, 0], [0, 2]]


@pytest.mark.parametrize("key", LIST_KEYS)
def test_a_list_of_sequences_indexes_as_a_tuple_as_pytorchs(key):
    as_tuple = any(not isinstance(k, int) for k in key)
    want_key = tuple(key) if as_tuple else key
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fnn.tensor(X)[key]
        y = fnn.zeros(X.shape)
        y[key] = 1.0
    assert [str(w.message).count("tuple of its items") for w in caught] == [1, 1] * as_tuple
    assert all(w.filename == __file__ for w in caught)  # the user's line
    np.testing.assert_array_equal(got.numpy(), X[want_key])
    want = np.zeros(X.shape)
    want[want_key] = 1.0
    np.testing.assert_array_equal(y.numpy(), want)
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuple(torch.tensor(X)[key].shape) == got.shape


@pytest.mark.parametrize("flag", [True, False])
def test_a_zero_d_mask_adds_a_leading_axis_as_pytorchs(flag):
    """x[mask] with a 0-d bool mask: x with a new leading axis of one entry (True) or none
    (False), 0-d x too (a NumPy error escaped before); x[mask] = v writes all of x or
    nothing."""
    for x in (fnn.tensor(5.0), fnn.tensor(X)):
        got = x[fnn.tensor(flag)]
        want = np.asarray(x.numpy())[None][[flag]]
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    y = fnn.zeros(X.shape)
    y[fnn.tensor(flag)] = 2.0
    np.testing.assert_array_equal(y.numpy(), np.full(X.shape, 2.0 if flag else 0.0))
    with pytest.warns(UserWarning, match="uint8"):  # a 0-d uint8 key is such a mask too
        assert fnn.tensor(X)[fnn.tensor(int(flag), dtype=fnn.uint8)].shape == want.shape


@pytest.mark.parametrize("key", [
    lambda lib: lib.tensor(1), lambda lib: lib.tensor(-1, dtype=lib.int32),
    lambda lib: (lib.tensor(2), lib.tensor(1)), lambda lib: (slice(None), lib.tensor(3)),
    lambda lib: (lib.tensor(1), Ellipsis, lib.tensor(0)), lambda lib: np.array(2),
])
def test_a_zero_d_int_tensor_indexes_as_an_int_a_view_as_pytorchs(key):
    """x[i] with a 0-d integer tensor i is x[int(i)] in PyTorch: a select, a view, so a write
    through it reaches x (it was an index_select, a silent copy)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        x = lib.tensor(X)
        view = x[key(lib)]
        view.mul_(0.0) if view.ndim else view.fill_(0.0)
        x[key(lib)] += 1.0
        results.append((np.asarray(view.numpy()), x.numpy()))
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key,value_shape", [
    ((1, 2, 3), (1,)), ((1, 2, 3), (1, 1)), ((1, 2), (1, 6)), (0, (1, 5, 6)),
    ((slice(None),), (1, 4, 5, 6)), ((IDX,), (1, 1, 1, 1, 6)), ((X > 0,), (1, 1)),
])
def test_setitem_drops_leading_unit_dims_of_the_value_as_pytorch(key, value_shape):
    """x[i] = out with out of shape (1,) or (1, 1) (a model's output for one sample) was
    refused: PyTorch drops the value's leading size-1 dims beyond the indexed shape's."""
    torch = pytest.importorskip("torch")
    value = np.arange(float(np.prod(value_shape))).reshape(value_shape) + 7.0
    ours, theirs = fnn.tensor(X), torch.tensor(X)
    ours[key] = fnn.tensor(value)
    theirs[key if not isinstance(key, tuple) or not isinstance(key[0], np.ndarray) else
           (torch.tensor(key[0]),)] = torch.tensor(value)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_batching_as_pytorch_users_write_it(device):
    data = fnn.tensor(X.reshape(4, 30), device=device)
    perm = fnn.tensor(np.random.default_rng(2).permutation(4), device=device)
    batches = [data[perm[i:i + 3]] for i in range(0, 4, 3)]
    np.testing.assert_array_equal(np.concatenate([b.numpy() for b in batches]),
                                  X.reshape(4, 30)[perm.numpy()])
    rows = list(data)
    assert len(rows) == len(data) == 4
    np.testing.assert_array_equal(rows[2].numpy(), X.reshape(4, 30)[2])


@pytest.mark.parametrize("key,value", [
    ((1,), 7.0), ((slice(None), 2), np.arange(6.0)), ((Ellipsis, slice(0, 6, 2)), -1.0),
    ((IDX,), 2.5), ((X > 0,), 0.0), ((slice(None), [0, 4], 1), np.array([1.0, 2.0])),
    ((slice(3, 0, -1), 0), np.arange(18.0).reshape(3, 6)), ((2, 3, 4), 9.0),
])
def test_setitem_in_place_as_numpy(device, key, value):
    want = X.copy()
    want[key] = value
    x = fnn.tensor(X, device=device)
    x[key] = value if np.ndim(value) == 0 else fnn.tensor(value, device=device)
    np.testing.assert_array_equal(x.numpy(), want)


def test_setitem_through_a_mask_with_the_selected_values(device):
    x = fnn.tensor(X, device=device)
    mask = X > 0
    x[fnn.tensor(mask, device=device)] = fnn.tensor(-X[mask], device=device)
    np.testing.assert_array_equal(x.numpy(), -np.abs(X))


def test_setitem_on_int_and_bool_tensors(device):
    a = fnn.tensor(np.arange(6), device=device)
    a[[1, 3]] = 0
    a[a > 3] = -1
    np.testing.assert_array_equal(a.numpy(), [0, 0, 2, 0, -1, -1])
    m = fnn.tensor(np.zeros(4, bool), device=device)
    m[1:3] = True
    np.testing.assert_array_equal(m.numpy(), [False, True, True, False])


def test_setitem_on_a_leaf_that_requires_grad_is_refused():
    x = fnn.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad.*no_grad"):
        x[0] = 1.0


@pytest.mark.parametrize("key,error,match", [
    (4, IndexError, "index 4 is out of range for dim 0 of size 4"),
    ((0, 0, -7), IndexError, "index -7 is out of range"),
    ((np.array([0, 4]),), IndexError, "index 4 is out of range for an axis of size 4"),
    (([0, -5],), IndexError, "index -5 is out of range"),
    ((1.5,), IndexError, "a float: use an int"),
    ((np.array([0.5]),), IndexError, "must be integers or bools"),
    ((np.ones(3, bool),), IndexError, r"mask of shape \(3,\) does not match"),
    ((0, 0, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, 0, Ellipsis), IndexError, "only one ellipsis"),
    ((slice(None, None, 0),), ValueError, "step cannot be zero"),
])
def test_bad_indices_name_the_problem(key, error, match):
    with pytest.raises(error, match=match):
        fnn.tensor(X)[key]


def test_index_tensor_out_of_range_on_cpu_and_under_anomaly(device):
    x = fnn.tensor(X, device=device)
    bad = fnn.tensor(np.array([0, 9]), device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="index 9 is out of range"):
            x[bad]
    with fnn.detect_anomaly(), pytest.raises(IndexError, match="index 9 is out of range"):
        x[bad]


def test_float_index_tensor_is_refused():
    with pytest.raises(IndexError, match="must be int64, int32, bool.*long"):
        fnn.tensor(X)[fnn.tensor([0.0, 1.0])]


@pytest.mark.parametrize("key", [[2], np.array([2]), (slice(None), [0, 2]), "cpu tensor"])
def test_host_data_indices_are_range_checked_on_every_device(device, key):
    # issue 25: on opencl a list, NumPy array or cpu tensor index was not checked
    x = fnn.arange(4.0).reshape(2, 2).to(device)
    key = fnn.tensor([2]) if isinstance(key, str) else key
    with pytest.raises(IndexError, match="index 2 is out of range for an axis of size 2"):
        x[key]
    z = fnn.zeros((3,), device=device)
    with pytest.raises(IndexError, match="index 7 is out of range"):
        z[[1, 7]] = fnn.tensor([2.0, 3.0], device=device)
    np.testing.assert_array_equal(z.numpy(), [0, 0, 0])


def test_an_unchecked_device_index_out_of_range_drops_the_write(device):
    # issue 25: on opencl z[tensor([5])] = 4 wrote element 0; a device index is checked only
    # on host-memory backends (and under detect_anomaly), elsewhere the write is dropped
    z = fnn.zeros((3,), device=device)
    far = fnn.tensor([5], device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="index 5 is out of range"):
            z[far] = 4.0
    else:
        z[far] = 4.0
        z[fnn.tensor([1, 7], device=device)] = fnn.tensor([2.0, 3.0], device=device)
    z[fnn.tensor([-1], device=device)] = 1.0
    np.testing.assert_array_equal(z.numpy(), [0, 0, 1] if device == "cpu" else [0, 2, 1])


def test_setitem_with_none_in_the_key(device):
    # issue 25: x[None, :] = v was refused (it works since the views change; kept here)
    x = fnn.zeros((2, 3), device=device)
    x[None, :] = fnn.ones((3,), device=device)
    x[None, 0, None, 1:] = 5.0
    np.testing.assert_array_equal(x.numpy(), [[1, 5, 5], [1, 1, 1]])
