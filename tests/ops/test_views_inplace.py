"""Views share storage and writes alias, as in PyTorch, on every backend: cpu and opencl
write through their strided views (the ``assign`` hook), and a backend that knows only
contiguous arrays ("copying", tests/ops/copying_backend.py: every view hook returns a
copy, no ``assign``) is kept right by the core's write-back composite. In-place ops and
augmented assignment write in place; their side on the tape is test_inplace_autograd.py."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn


def _grid(dev, shape=(3, 4), dtype=fnn.float32):
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    return fnn.tensor(host, dtype=dtype, device=dev), host.astype(dtype.numpy)


# each case: make a view of x (fastnn) and of a (NumPy), then write through it
VIEWS = {
    "basic index": (lambda x: x[1], lambda a: a[1]),
    "slice with step": (lambda x: x[:, ::2], lambda a: a[:, ::2]),
    "view(-1)": (lambda x: x.view(-1), lambda a: a.reshape(-1)),
    "view(2, 6)": (lambda x: x.view(2, 6), lambda a: a.reshape(2, 6)),
    "reshape": (lambda x: x.reshape(6, 2), lambda a: a.reshape(6, 2)),
    "T": (lambda x: x.T, lambda a: a.T),
    "mT": (lambda x: x.mT, lambda a: a.T),
    "transpose": (lambda x: x.transpose(0, 1), lambda a: a.T),
    "permute": (lambda x: x.permute(1, 0), lambda a: a.T),
    "narrow": (lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "select": (lambda x: x.select(1, 2), lambda a: a[:, 2]),
    "unbind": (lambda x: x.unbind(0)[2], lambda a: a[2]),
    "split": (lambda x: x.split(2, dim=1)[1], lambda a: a[:, 2:4]),
    "chunk": (lambda x: x.chunk(3, 0)[1], lambda a: a[1:2]),
    "diagonal": (lambda x: x.diagonal(), lambda a: np.einsum("ii->i", a[:, :3])),
    "diagonal offset": (lambda x: x.diagonal(1), lambda a: a[[0, 1, 2], [1, 2, 3]]),
    "unflatten": (lambda x: x.unflatten(1, (2, 2)), lambda a: a.reshape(3, 2, 2)),
    "unsqueeze": (lambda x: x.unsqueeze(0), lambda a: a[None]),
    "squeeze": (lambda x: x[None].squeeze(0), lambda a: a),
    "detach": (lambda x: x.detach(), lambda a: a),
    "data": (lambda x: x.data, lambda a: a),
    "view of a view": (lambda x: x.T[1:3], lambda a: a.T[1:3]),
    # the no-op views: new tensors (as PyTorch's), still views of x's storage
    "view(same shape)": (lambda x: x.view(x.shape), lambda a: a),
    "x[...]": (lambda x: x[...], lambda a: a),
    "x[:]": (lambda x: x[:], lambda a: a),
    "squeeze() of nothing": (lambda x: x.squeeze(), lambda a: a),
    "expand(same shape)": (lambda x: x.expand(3, 4), lambda a: a),
    "narrow(all)": (lambda x: x.narrow(0, 0, 3), lambda a: a),
    "T then flatten last": (lambda x: x.T.unflatten(0, (2, 2))[1], lambda a: a.T.reshape(
        2, 2, 3)[1]),
}


@pytest.mark.parametrize("case", sorted(VIEWS))
def test_a_write_through_any_view_reaches_the_base_and_other_views(dev, case):
    make, ref = VIEWS[case]
    x, a = _grid(dev)
    other = x[:, 1:]  # a second view: it must see the write too
    v = make(x)
    v.fill_(-5.0)
    if case == "diagonal offset":
        a[[0, 1, 2], [1, 2, 3]] = -5.0
    elif case == "diagonal":
        np.fill_diagonal(a, -5.0)
    else:
        ref(a)[...] = -5.0
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(other.numpy(), a[:, 1:])
    np.testing.assert_array_equal(v.numpy(), np.full(v.shape, -5.0, np.float32))


def test_index_assignment_through_chains_of_views(dev):
    x, a = _grid(dev)
    x[0][1] = 9.0          # x[0] is a view: its item write reaches x
    v = x[2]
    v[3] = 7.0
    x.view(-1)[0] = -1.0
    x[1, 1:3] = fnn.tensor([20.0, 30.0], device=dev)
    x[[0, 2], 3] = fnn.tensor([40.0, 50.0], device=dev)  # advanced: a scatter
    x[x < 2] = 100.0                                        # a mask like x
    a[0][1] = 9.0
    a[2][3] = 7.0
    a.reshape(-1)[0] = -1.0
    a[1, 1:3] = [20.0, 30.0]
    a[[0, 2], 3] = [40.0, 50.0]
    a[a < 2] = 100.0
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(v.numpy(), a[2])


def test_augmented_assignment_writes_in_place(dev):
    x, a = _grid(dev)
    alias, row = x, x[1]
    x += 1
    x *= 2
    x -= fnn.ones((4,), device=dev)
    x /= 4
    assert x is alias
    expected = ((a + 1) * 2 - 1) / 4
    np.testing.assert_allclose(alias.numpy(), expected)
    np.testing.assert_allclose(row.numpy(), expected[1])
    n = fnn.tensor([5, 7], device=dev)
    same = n
    n //= 2
    n %= 2
    assert same.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="can't be cast"):
        n /= 2  # int64 /= 2 would be float, as torch refuses


@pytest.mark.parametrize("write", [
    lambda lib, b: b.__iadd__(1), lambda lib, b: b.mul_(2), lambda lib, b: b.add_(lib.tensor([1])),
    lambda lib, b: b.__iadd__(True), lambda lib, b: b.__ior__(lib.tensor([False, True])),
    lambda lib, b: b.copy_(lib.tensor([0, 5])), lambda lib, b: b.fill_(3),
])
def test_in_place_onto_a_bool_tensor_casts_as_torch(write):
    """bool += 1 is refused as PyTorch's can_cast refuses int64 into bool (fastnn wrote True
    silently); bool += True, |=, copy_ and fill_ convert as PyTorch's."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        b = lib.tensor([True, False])
        try:
            write(lib, b)
            results.append(b.tolist())
        except RuntimeError:
            results.append("refused")
    assert results[0] == results[1]


@pytest.mark.parametrize("fill", [
    lambda x: x.index_fill_(0, x.new_tensor([1]).long(), 2.5),
    lambda x: x.scatter_(0, x.new_tensor([1]).long(), 2.5),
    lambda x: x.index_fill(0, x.new_tensor([0]).long(), True),
])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_index_fill_and_scatter_convert_the_value_as_torch(fill, dtype):
    """A number filled into an integer or bool tensor is converted to its dtype, as PyTorch's
    (index_fill_/scatter_ of 2.5 into int64 was refused, True into bool too)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        out = fill(lib.tensor([1, 0, 3]).to(getattr(lib, dtype)))
        results.append((str(out.dtype).rpartition(".")[2], out.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("call", [
    lambda L: L.tensor([1, 2, -3]).div_(2, rounding_mode="floor"),
    lambda L: L.tensor([-7, 7]).div_(2, rounding_mode="trunc"),
    lambda L: L.tensor([-7.0, 7.0]).divide_(L.tensor(2.0), rounding_mode="floor"),
    lambda L: L.tensor([-7.0, 7.0]).div_(2),
])
def test_div_in_place_takes_rounding_mode_as_torch(call):
    """x.div_(2, rounding_mode="floor") (the in-place spelling of integer division) raised a
    TypeError on the keyword."""
    torch = pytest.importorskip("torch")
    ours, theirs = call(fnn), call(torch)
    assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
    assert ours.tolist() == theirs.tolist()


def test_underscore_methods_match_numpy(dev):
    x, a = _grid(dev)
    y = fnn.tensor(np.full((3, 4), 2.0), dtype=fnn.float32, device=dev)
    assert x.add_(y, alpha=3) is x
    a = a + 3 * 2.0
    x.mul_(0.5).sub_(1.0).clamp_(min=0.0, max=6.0).sqrt_()
    a = np.sqrt(np.clip(a * 0.5 - 1.0, 0.0, 6.0))
    np.testing.assert_allclose(x.numpy(), a, rtol=1e-6)
    mask = fnn.tensor(a > 2.0, device=dev)
    x.masked_fill_(mask, -1.0)
    a[a > 2.0] = -1.0
    np.testing.assert_allclose(x.numpy(), a, rtol=1e-6)
    x.zero_()
    assert not x.numpy().any()
    x.copy_(fnn.tensor(np.arange(4.0), device=dev))  # broadcast, float64 -> float32
    np.testing.assert_array_equal(x.numpy(), np.tile(np.arange(4.0), (3, 1)))
    index = fnn.tensor([0, 2], device=dev)
    x.index_add_(0, index, fnn.ones((2, 4), device=dev))
    x.index_fill_(1, fnn.tensor([3], device=dev), 8.0)
    b = np.tile(np.arange(4.0), (3, 1))
    b[[0, 2]] += 1
    b[:, 3] = 8.0
    np.testing.assert_array_equal(x.numpy(), b)
    x.lerp_(fnn.zeros((3, 4), device=dev), 0.5).addcmul_(x, x, value=2.0)
    b = b * 0.5
    b = b + 2.0 * b * b
    np.testing.assert_allclose(x.numpy(), b, rtol=1e-6)


def test_random_fills_write_in_place_and_follow_the_seed(dev):
    x = fnn.zeros((200,), device=dev)
    view = x[100:]
    fnn.manual_seed(3)
    x.uniform_(-2.0, 2.0)
    values = x.numpy().copy()
    assert -2.0 <= values.min() and values.max() < 2.0 and values.std() > 0.5
    np.testing.assert_array_equal(view.numpy(), values[100:])
    fnn.manual_seed(3)
    y = fnn.zeros((200,), device=dev).uniform_(-2.0, 2.0)
    np.testing.assert_array_equal(y.numpy(), values)
    x.normal_(10.0, 0.1)
    assert abs(x.numpy().mean() - 10.0) < 0.1
    x.bernoulli_(0.25)
    assert set(np.unique(x.numpy())) <= {0.0, 1.0}


def test_a_write_into_an_expanded_view_is_refused(dev):
    x = fnn.zeros((1, 3), device=dev)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.expand(4, 3).fill_(1.0)


def test_a_slice_of_an_expanded_view_that_does_not_overlap_is_written(dev):
    # as PyTorch's: one row (or column) of an expand()ed tensor is a plain strided view of
    # the storage; writing it writes the source, and every row of the expansion sees it
    x = fnn.tensor([1.0, 2.0, 3.0], device=dev)
    e = x.expand(2, 3)
    e[0].add_(1.0)
    e[0, 1] = 7.0
    np.testing.assert_array_equal(x.numpy(), [2.0, 7.0, 4.0])
    np.testing.assert_array_equal(e.numpy(), [[2.0, 7.0, 4.0]] * 2)
    y = fnn.zeros((3, 1), device=dev)
    y.expand(3, 4)[:, 0].fill_(5.0)
    np.testing.assert_array_equal(y.numpy(), [[5.0]] * 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        e[:, 0].fill_(1.0)  # (this column is one element, twice)


def test_a_read_only_array_that_owns_its_memory_stays_unwritten():
    # the cpu backend lifts NumPy's read-only flag only for views of writable memory (a
    # broadcast); a constant it keeps read-only is still refused
    from fastnn_cpu.indexing import assign
    kept = np.zeros(3, np.float32)
    kept.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        assign(kept[1:], np.ones(2, np.float32))
    assert not kept.any()


def test_strides_offsets_and_contiguity_are_pytorchs(dev):
    x, _ = _grid(dev, (2, 3, 4))
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    t = x.transpose(0, 2)
    assert t.stride() == (1, 4, 12) and not t.is_contiguous()
    assert x[1, :, 2:].storage_offset() == 14 and x[1, :, 2:].stride() == (4, 1)
    assert x.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert t.contiguous().is_contiguous() and t.contiguous().stride() == (6, 2, 1)
    assert x.contiguous() is x
    assert x[0].data_ptr() == x.data_ptr() and x[1].data_ptr() != x.data_ptr()
    assert x[1]._base is x and x._base is None


def test_reshape_copies_only_where_no_view_exists(dev):
    x, a = _grid(dev)
    flat = x.T.reshape(-1)        # not viewable: a copy, as PyTorch's
    flat.fill_(0.0)
    np.testing.assert_array_equal(x.numpy(), a)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.T.view(-1)
    split = x.T.reshape(2, 2, 3)  # splitting a dim of a transpose is a view
    split[0, 0, 0] = 99.0
    assert x.numpy()[0, 0] == 99.0


def test_numpy_and_from_numpy_share_memory_on_cpu():
    x = fnn.zeros((3,))
    host = x.numpy()
    x[1] = 4.0
    assert host[1] == 4.0


def test_untyped_storage_tells_shared_tensors_apart_as_pytorchs():
    """Hugging Face's save_pretrained finds tied weights by
    x.untyped_storage().data_ptr() and .nbytes(); fastnn had no untyped_storage."""
    torch = pytest.importorskip("torch")
    for lib in (fnn, torch):
        w, other = lib.ones(4, 3), lib.ones(4, 3)
        views = (w[1:], w.T, w.view(12), w[:, 0])
        assert all(v.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
                   for v in views)
        assert other.untyped_storage().data_ptr() != w.untyped_storage().data_ptr()
        assert [v.untyped_storage().nbytes() for v in views] == [48] * 4
        assert w.untyped_storage().size() == len(w.untyped_storage()) == 48
        assert str(w.untyped_storage().device) == "cpu"
