"""Basic indexing with ints (``x[1]``, ``x[:, 2]``, ``x[1, 1:3]``) as one view (kind
"select", issue 22): values against NumPy float64 and against the general path (the same
layout in the base's storage), aliasing both ways on every backend (cpu, opencl and the
copying backend that has no ``assign``), gradients against finite differences, in-place
writes through the view on the tape, and the errors of out-of-range indices."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops import index_keys, indexing
from tests.helpers import finite_difference, tape_grads

rng = np.random.default_rng(22)

KEYS = [1, -1, 0, (2,), (1, 2), (-1, -4), (slice(None), 2), (slice(None), -1),
        (1, slice(1, 3)), (slice(1, 3), 0), (slice(None, None, 2), -2),
        (0, slice(3, 1)), (slice(1, None), 1, slice(None, None, 2)), (-2, 0, 1)]

# the bases: contiguous, transposed, a stepped slice, a row of a bigger tensor
BASES = {
    "contiguous": (lambda x: x, lambda a: a),
    "transposed": (lambda x: x.permute(2, 1, 0).transpose(0, 2), lambda a: a),
    "stepped": (lambda x: x[:, ::2], lambda a: a[:, ::2]),
    "row of a view": (lambda x: x.T[1:3].T, lambda a: a[:, :, 1:3]),
}


def _general(x, key):
    """x[key] by the general path (the key expanded, a slice, then a reshape)."""
    out, advanced = indexing._basic("index", x, index_keys.expand_key("index", x, key))
    assert not advanced
    return out


def _layout(t, unit=False):
    strides = tuple(s for s, n in zip(t.stride(), t.shape) if n != 1 or not unit)
    return t.shape, strides, t.storage_offset(), t.is_contiguous()


def _offset(view, host):
    """A NumPy view's offset in ``host`` (float64, C order), in elements."""
    return (view.__array_interface__["data"][0] - host.__array_interface__["data"][0]) // 8


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_values_and_layout_match_numpy_and_the_general_path(base, key):
    host = rng.standard_normal((3, 4, 5))
    make, ref = BASES[base]
    x = make(fnn.tensor(host))
    a = ref(host)
    if not _fits(a.shape, key):
        pytest.skip("key does not fit this base")
    got = x[key]
    view = a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]  # 0-d: still a view
    np.testing.assert_array_equal(got.numpy(), view)
    general = _general(x, key)
    np.testing.assert_array_equal(general.numpy(), view)
    # the layout is NumPy's (hence PyTorch's) exactly; the general path's reshape gives
    # the same but for the strides of size-1 dims, which address nothing
    assert got.stride() == tuple(s // 8 for s in view.strides)
    if view.size:  # (NumPy puts an empty view at its base's start, PyTorch at the slice's)
        assert got.storage_offset() == _offset(view, host)
        assert _layout(got, unit=True) == _layout(general, unit=True)
    assert got.is_contiguous() == (view.flags.c_contiguous or not view.size)
    if got.ndim:  # a view of x's storage: its base, as PyTorch's ._base
        assert got._base is (x._base if x._base is not None else x)


def _fits(shape, key):
    key = key if isinstance(key, tuple) else (key,)
    return all(not isinstance(k, int) or -n <= k < n for k, n in zip(key, shape))


def test_strides_and_offsets_are_numpys():
    host = np.arange(60.0).reshape(3, 4, 5)
    x = fnn.tensor(host)
    for key in [1, (1, 2), (slice(None), 3), (2, slice(1, 4, 2)), (slice(None), -1, 2)]:
        view = x[key]
        expect = host[key]
        assert view.stride() == tuple(s // 8 for s in expect.strides)
        assert view.storage_offset() == _offset(expect, host)


@pytest.mark.parametrize("key", [1, -2, (slice(None), 2), (1, slice(1, 3)), (2, -1)],
                         ids=repr)
def test_writes_alias_both_ways(dev, key):  # noqa: F811 (the fixture)
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = fnn.tensor(host, device=dev)
    view = x[key]
    view.mul_(-1.0)  # through the view: the base sees it
    expect = host.copy()
    expect[key] *= -1
    np.testing.assert_array_equal(x.numpy(), expect)
    x.add_(100.0)  # through the base: the view sees it
    expect += 100
    np.testing.assert_array_equal(view.numpy(), expect[key])
    x[key] = 7.0  # assignment through the same key
    expect[key] = 7
    np.testing.assert_array_equal(x.numpy(), expect)
    np.testing.assert_array_equal(view.numpy(), expect[key])


def test_views_of_select_views_alias(dev):  # noqa: F811 (the fixture)
    host = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = fnn.tensor(host, device=dev)
    inner = x.transpose(0, 2)[1][:, 1]  # a select view of a transposed view, then another
    np.testing.assert_array_equal(inner.numpy(), host.transpose(2, 1, 0)[1][:, 1])
    inner.fill_(-3.0)
    expect = host.copy()
    expect.transpose(2, 1, 0)[1][:, 1] = -3
    np.testing.assert_array_equal(x.numpy(), expect)
    flat = x[1].reshape(-1)  # a reshape of a select view is still a view
    flat[5] = 42.0
    expect[1].reshape(-1)[5] = 42
    np.testing.assert_array_equal(x.numpy(), expect)


@pytest.mark.parametrize("key", [1, -1, (1, 2), (slice(None), -2), (0, slice(1, 4, 2)),
                                 (slice(1, 3), 1, slice(None, None, 2))], ids=repr)
def test_gradients_match_finite_differences(key):
    host = rng.standard_normal((3, 4, 5))
    expect, weights = finite_difference(lambda a: a[key], [host], 0)
    (got,) = tape_grads(lambda t: t[key], [host], weights)
    np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-8)


def test_select_node_and_double_backward():
    g = fnn.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    row = g[1]
    assert row.grad_fn.name() == "SelectBackward0"  # as PyTorch names x[1]
    (first,) = fnn.autograd.grad((row ** 2).sum(), g, create_graph=True)
    expect = np.zeros((3, 4))
    expect[1] = 2 * g.numpy()[1]
    np.testing.assert_allclose(first.numpy(), expect)
    (second,) = fnn.autograd.grad(first[1].sum(), g)
    expect = np.zeros((3, 4))
    expect[1] = 2
    np.testing.assert_allclose(second.numpy(), expect)


def test_inplace_through_a_select_view_on_the_tape(dev):  # noqa: F811 (the fixture)
    host = rng.standard_normal((3, 4))
    g = fnn.tensor(host, requires_grad=True, device=dev)
    w = fnn.tensor(rng.standard_normal(4), requires_grad=True, device=dev)
    y = g * 1.0
    y[1].mul_(w)  # a write through the view, with history: the base's grad_fn changes
    y[:, 2].add_(1.0)
    y.sum().backward()
    expect = np.ones((3, 4))
    expect[1] = w.numpy()
    np.testing.assert_allclose(g.grad.numpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), host[1], rtol=1e-6)


@pytest.mark.parametrize("key, message", [
    (3, "index 3 is out of range for dim 0 of size 3"),
    (-4, "index -4 is out of range for dim 0 of size 3"),
    ((1, 4), "index 4 is out of range for dim 1 of size 4"),
    ((slice(None), -5), "index -5 is out of range for dim 1 of size 4"),
    ((0, 0, 0), "too many indices"),
])
def test_out_of_range_indices_raise_index_error(dev, key, message):  # noqa: F811
    x = fnn.tensor(np.zeros((3, 4), np.float32), device=dev)
    with pytest.raises(IndexError, match=message.replace("(", r"\(")):
        x[key]
    with pytest.raises(IndexError, match="out of range|too many"):
        x[key] = 1.0


def test_zero_d_and_empty_results():
    x = fnn.tensor(np.arange(6.0).reshape(2, 3))
    item = x[1, 2]
    assert item.shape == () and item.item() == 5.0
    item.fill_(-1.0)  # a 0-d view still aliases
    assert x.numpy()[1, 2] == -1.0
    empty = x[1, 3:1]
    assert empty.shape == (0,)
    with pytest.raises(IndexError):
        fnn.tensor(2.0)[0]
