"""Tensor methods and names PyTorch has that fastnn lacked: index_reduce, histogram,
x.new, narrow_copy, the unsafe_ splits, layout and device flags, the conversions to
dtypes fastnn does not have (a clear error), nn.RNNBase/RNNCellBase and NLLLoss2d."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

try:
    import torch
except ImportError:  # pragma: no cover - the references below hold without it
    torch = None

SRC = np.array([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])


def _index_reduce_ref(x, dim, index, src, reduce, include_self):
    """PyTorch's definition, slice by slice in NumPy float64."""
    out = x.copy()
    moved, src_m = np.moveaxis(out, dim, 0), np.moveaxis(src, dim, 0)
    groups = {}
    for i, target in enumerate(index):
        groups.setdefault(target, []).append(src_m[i])
    fn = {"prod": np.prod, "amax": np.max, "amin": np.min, "mean": np.mean}[reduce]
    for target, rows in groups.items():
        stack = ([moved[target]] if include_self else []) + rows
        moved[target] = fn(np.stack(stack), axis=0)
    return out


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x = np.arange(6.0).reshape(3, 2) - 2.0
    for dim, index, src in ((0, [0, 0, 2], SRC), (1, [1, 1], SRC[:, :2])):
        got = fnn.tensor(x).index_reduce(dim, fnn.tensor(index), fnn.tensor(src), reduce,
                                         include_self=include_self)
        want = _index_reduce_ref(x, dim, index, src, reduce, include_self)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    y = fnn.tensor(x)
    y.index_reduce_(0, fnn.tensor([2, 2, 0]), fnn.tensor(SRC), reduce,
                    include_self=include_self)
    np.testing.assert_allclose(y.numpy(), _index_reduce_ref(x, 0, [2, 2, 0], SRC, reduce,
                                                            include_self), rtol=1e-12)
    with pytest.raises(RuntimeError, match="reduce must be one of"):
        fnn.tensor(x).index_reduce(0, fnn.tensor([0, 1, 2]), fnn.tensor(SRC), "sum")


@pytest.mark.parametrize("kwargs", [dict(bins=4), dict(bins=3, range=(0.0, 6.0)),
                                    dict(bins=5, density=True)])
def test_histogram_is_numpys(kwargs):
    values = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 5.5])
    hist, edges = fnn.histogram(fnn.tensor(values, dtype=fnn.float64), **kwargs)
    want_hist, want_edges = np.histogram(values, kwargs["bins"], range=kwargs.get("range"),
                                         density=kwargs.get("density", False))
    np.testing.assert_allclose(hist.numpy(), want_hist, rtol=1e-12)
    np.testing.assert_allclose(edges.numpy(), want_edges, rtol=1e-12)
    w = fnn.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=fnn.float64)
    got = fnn.tensor(values, dtype=fnn.float64).histogram(
        fnn.tensor([0.0, 2.0, 6.0], dtype=fnn.float64), weight=w)
    np.testing.assert_allclose(got.hist.numpy(), [4.0, 17.0])
    if torch is not None:
        ref = torch.histogram(torch.tensor(values), **kwargs)
        np.testing.assert_allclose(hist.numpy(), ref.hist.numpy(), rtol=1e-12)


def test_small_names():
    x = fnn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.new([1, 2]).dtype is fnn.float32 and x.new(2, 3).shape == (2, 3)
    assert fnn.tensor([1]).new([5]).dtype is fnn.int64
    c = x.narrow_copy(1, 1, 2)
    c[0, 0] = 100.0
    assert c.tolist() == [[100.0, 3.0], [5.0, 6.0]] and x[0, 1].item() == 2.0
    assert [t.tolist() for t in x.unsafe_chunk(2, 1)] == [[[1.0, 2.0], [4.0, 5.0]],
                                                         [[3.0], [6.0]]]
    assert [t.shape for t in x.unsafe_split(1, 0)] == [(1, 3), (1, 3)]
    assert x.layout is fnn.strided and repr(fnn.strided) == "fastnn.strided"
    assert not x.is_mps and not x.is_xpu and x.output_nr == 0
    for method, dtype in (("byte", fnn.uint8), ("char", fnn.int8), ("short", fnn.int16)):
        assert getattr(x, method)().dtype is dtype
    for method in ("cfloat", "cdouble"):
        with pytest.raises(TypeError, match="is not a fastnn dtype"):
            getattr(x, method)()
    assert isinstance(nn.LSTM(2, 3), nn.RNNBase) and isinstance(nn.GRU(2, 3), nn.RNNBase)
    assert isinstance(nn.LSTMCell(2, 3), nn.RNNCellBase) and not isinstance(nn.Linear(1, 1),
                                                                             nn.RNNBase)
    loss = nn.NLLLoss2d()
    logp = fnn.tensor(np.log(np.full((1, 2, 2, 2), 0.5)), dtype=fnn.float64)
    np.testing.assert_allclose(loss(logp, fnn.tensor([[[0, 1], [1, 0]]])).item(), np.log(2))


def test_share_memory_says_it_shares_nothing():
    """PyTorch's share_memory_() puts x where processes started afterwards write into it
    (Hogwild); fastnn cannot, so it says so (once) rather than train copies silently."""
    from fastnn.ops import tensor_facts

    tensor_facts._SAID_NOT_SHARED.clear()
    x = fnn.ones(2)
    with pytest.warns(UserWarning, match="not shared across processes"):
        assert x.share_memory_() is x
    tensor_facts._SAID_NOT_SHARED.clear()
    model = nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="not shared across processes"):
        assert model.share_memory() is model
    assert not x.is_shared()


@pytest.mark.parametrize("case", ["ints", "range density", "edges weight", "one int", "3-d"])
def test_histogramdd_matches_torch(case):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    points = rng.random((4, 5, 3) if case == "3-d" else (50, 2)).astype(np.float32)
    results = []
    for module in (torch, fnn):
        kwargs = {"ints": dict(bins=[3, 4]), "one int": dict(bins=5), "3-d": dict(bins=2),
                  "range density": dict(bins=3, range=[0.0, 1.0, 0.0, 2.0], density=True),
                  "edges weight": dict(bins=[module.tensor([0.0, 0.5, 1.0]),
                                             module.tensor([0.0, 0.2, 1.0])],
                                       weight=module.tensor(np.arange(50.0,
                                                                      dtype=np.float32)))}[case]
        results.append(module.histogramdd(module.tensor(points), **kwargs))
    theirs, ours = results
    np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6)
    assert ours.hist.dtype == fnn.float32 and isinstance(ours.bin_edges, tuple)
    for mine, their in zip(ours.bin_edges, theirs.bin_edges, strict=True):
        np.testing.assert_allclose(mine.numpy(), their.numpy(), rtol=1e-6)
