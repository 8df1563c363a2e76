"""tril, triu, diag, diag_embed, trace, roll, rot90, flips, repeat_interleave, unfold and
the multi-tensor ops: values, dtypes and gradients against PyTorch's, views where PyTorch
returns views, and PyTorch's refusals."""

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.torch_compare import compare, torch

R = np.random.default_rng(0)
M34, M43, V4 = R.normal(size=(3, 4)), R.normal(size=(4, 3)), R.normal(size=4)
B234 = R.normal(size=(2, 3, 4))

# (id, op on a module-like namespace, inputs): each runs as ``op(fnn, ...)`` and
# ``op(torch, ...)``
CASES = [
    ("tril", lambda m, x: m.tril(x), (M34,)),
    ("tril k=1", lambda m, x: m.tril(x, 1), (M34,)),
    ("tril k=-2 batch", lambda m, x: m.tril(x, diagonal=-2), (B234,)),
    ("triu", lambda m, x: m.triu(x), (M43,)),
    ("triu method k=2", lambda m, x: x.triu(2), (B234,)),
    ("tril empty", lambda m, x: m.tril(x), (np.zeros((0, 3)),)),
    ("tril bool", lambda m, x: m.tril(x, 1), (np.arange(12).reshape(3, 4) % 3 == 0,)),
    ("triu int32", lambda m, x: x.triu(-1), (np.arange(12, dtype=np.int32).reshape(3, 4),)),
    ("diag 1d", lambda m, x: m.diag(x), (V4,)),
    ("diag 1d k=2", lambda m, x: m.diag(x, 2), (V4,)),
    ("diag 1d k=-1", lambda m, x: x.diag(-1), (V4,)),
    ("diag 2d", lambda m, x: m.diag(x), (M34,)),
    ("diag 2d k=-1", lambda m, x: m.diag(x, -1), (M43,)),
    ("diag_embed", lambda m, x: m.diag_embed(x), (M34,)),
    ("diag_embed offset dims", lambda m, x: m.diag_embed(x, 1, 0, 2), (M34,)),
    ("diag_embed neg offset", lambda m, x: m.diag_embed(x, -2, dim1=-1, dim2=0), (B234,)),
    ("diag_embed empty", lambda m, x: m.diag_embed(x), (np.zeros((2, 0)),)),
    ("trace", lambda m, x: m.trace(x), (M34,)),
    ("trace int", lambda m, x: m.trace(x), (np.arange(12, dtype=np.int32).reshape(3, 4),)),
    ("roll flat", lambda m, x: m.roll(x, 5), (M34,)),
    ("roll dims", lambda m, x: m.roll(x, (1, -2), (0, -1)), (B234,)),
    ("roll method", lambda m, x: x.roll(-1, 1), (M34,)),
    ("roll empty", lambda m, x: m.roll(x, 2, 0), (np.zeros((0, 2)),)),
    ("rot90", lambda m, x: m.rot90(x), (M34,)),
    ("rot90 k=2", lambda m, x: m.rot90(x, 2), (M34,)),
    ("rot90 k=-1 dims", lambda m, x: m.rot90(x, -1, (2, 0)), (B234,)),
    ("rot90 k=4", lambda m, x: x.rot90(4, [0, 1]), (M34,)),
    ("fliplr", lambda m, x: m.fliplr(x), (B234,)),
    ("flipud", lambda m, x: x.flipud(), (V4,)),
    ("flip 0-d", lambda m, x: m.flip(x, (0,)), (np.array(2.5),)),
    ("repeat_interleave int", lambda m, x: m.repeat_interleave(x, 2), (M34,)),
    ("repeat_interleave dim", lambda m, x: x.repeat_interleave(3, dim=1), (M34,)),
    ("repeat_interleave tensor", lambda m, x: m.repeat_interleave(
        x, m.tensor([1, 0, 2]), dim=-2), (B234,)),
    ("repeat_interleave 0-d", lambda m, x: m.repeat_interleave(x, 3), (np.array(1.5),)),
    ("repeat_interleave counts", lambda m, x: m.repeat_interleave(x), (np.array([2, 0, 3]),)),
    ("unfold views", lambda m, x: x.unfold(1, 2, 2), (M34,)),
    ("unfold overlap", lambda m, x: x.unfold(-1, 3, 1), (B234,)),
    ("unfold gap", lambda m, x: x.unfold(0, 2, 3), (R.normal(size=(10, 2)),)),
    ("unfold ragged", lambda m, x: x.unfold(0, 1, 3), (R.normal(size=(5,)),)),
    ("unfold 0-d", lambda m, x: x.unfold(0, 1, 1), (np.array(3.0),)),
    ("broadcast_tensors", lambda m, x, y: m.broadcast_tensors(x, y),
     (R.normal(size=(3, 1)), R.normal(size=(4,)))),
    ("meshgrid ij", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), (V4, R.normal(size=3))),
    ("meshgrid xy 3", lambda m, x, y, z: m.meshgrid([x, y, z], indexing="xy"),
     (V4, R.normal(size=3), R.normal(size=2))),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), (np.array(2.0),)),
    ("atleast_2d many", lambda m, x, y: m.atleast_2d(x, y), (np.array(2.0), V4)),
    ("atleast_3d list", lambda m, x, y, z: m.atleast_3d([x, y, z]), (np.array(2.0), V4, M34)),
    ("atleast_3d 4d", lambda m, x: m.atleast_3d(x), (R.normal(size=(1, 2, 1, 2)),)),
    ("block_diag", lambda m, x, y, z: m.block_diag(x, y, z), (M34, V4, np.array(3.0))),
    ("block_diag ints", lambda m, x, y: m.block_diag(x, y),
     (np.ones((2, 2), np.int64), np.arange(3, dtype=np.int32))),
    ("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), (V4, R.normal(size=3))),
    ("cartesian_prod 1", lambda m, x: m.cartesian_prod(x), (V4,)),
    ("combinations", lambda m, x: m.combinations(x), (V4,)),
    ("combinations r=3 repl", lambda m, x: m.combinations(x, 3, True), (V4,)),
    ("combinations r=1", lambda m, x: m.combinations(x, 1), (V4,)),
    ("combinations too few", lambda m, x: m.combinations(x, 2), (np.array([1.0]),)),
]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_torch(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays)


TRANSPOSED = [c for c in CASES if c[0] in ("tril k=1", "triu", "diag 2d", "roll dims",
                                            "rot90", "unfold overlap", "unfold views",
                                            "diag_embed offset dims", "block_diag")]


@pytest.mark.parametrize("op, arrays", [c[1:] for c in TRANSPOSED],
                         ids=[c[0] for c in TRANSPOSED])
def test_non_contiguous_inputs(op, arrays):
    compare(lambda *a: op(fnn, *a), lambda *a: op(torch, *a), *arrays, transposed=True)


def test_views_share_storage_as_torch():
    x = fnn.arange(12.0).reshape(3, 4)
    windows = x.unfold(1, 2, 2)
    assert windows._base is x._base
    windows[0, 1, 0] = -1.0
    assert x[0, 2].item() == -1.0
    assert windows.stride() == torch.arange(12.0).reshape(3, 4).unfold(1, 2, 2).stride()
    a, b = fnn.meshgrid(fnn.arange(3), fnn.arange(2), indexing="ij")
    assert a._base is not None and a.stride() == (1, 0)
    s = fnn.atleast_3d(fnn.arange(4.0))
    assert s._base is not None


def test_indices_match_torch():
    for row, col, off in ((3, 4, 0), (4, 3, 1), (3, 3, -1), (0, 2, 0), (2, 5, -4)):
        for name in ("tril_indices", "triu_indices"):
            got = getattr(fnn, name)(row, col, off)
            want = getattr(torch, name)(row, col, off)
            assert got.dtype == fnn.int64 and got.shape == tuple(want.shape)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert fnn.tril_indices(3, 3, dtype=fnn.int32).dtype == fnn.int32


def test_refusals_as_torch():
    x = fnn.zeros(2, 3)
    cases = [lambda m, t: m.tril(m.zeros(3)), lambda m, t: m.flip(t, (0, 0)),
             lambda m, t: m.flip(t, (1, -1)), lambda m, t: m.rot90(t, 1, (0, 0)),
             lambda m, t: m.fliplr(m.zeros(3)), lambda m, t: m.trace(m.zeros(3)),
             lambda m, t: t.unfold(1, 4, 1), lambda m, t: t.unfold(1, 2, 0),
             lambda m, t: m.diag(m.zeros(2, 2, 2)), lambda m, t: m.block_diag(m.zeros(1, 1, 1)),
             lambda m, t: m.repeat_interleave(t, m.tensor([1, 2]), dim=1),
             lambda m, t: m.combinations(t)]
    for case in cases:
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(torch, torch.zeros(2, 3))
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case(fnn, x)


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning):
        fnn.meshgrid(fnn.arange(2), fnn.arange(3))


@pytest.mark.parametrize("name, args", [
    ("tril_", lambda m: (1,)), ("triu_", lambda m: ()),
    ("addmm_", lambda m: (m.ones(3, 2, dtype=m.float64), m.ones(2, 4, dtype=m.float64))),
    ("baddbmm_", None), ("addmv_", None)])
def test_in_place_forms_write_through_views(name, args):
    if args is None:  # shapes of their own
        base = np.arange(24.0).reshape(2, 3, 4) if name == "baddbmm_" else np.arange(3.0)
        shapes = ((2, 3, 5), (2, 5, 4)) if name == "baddbmm_" else ((3, 2), (2,))

        def extra(m):
            return tuple(m.ones(*s, dtype=m.float64) for s in shapes)
    else:
        base, extra = np.arange(12.0).reshape(3, 4), args
    mine, theirs = fnn.tensor(base), torch.tensor(base)
    getattr(mine[...], name)(*extra(fnn), **({"beta": 0.5} if "add" in name else {}))
    getattr(theirs[...], name)(*extra(torch), **({"beta": 0.5} if "add" in name else {}))
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
