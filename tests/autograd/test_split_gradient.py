"""The gradients of a tensor's slices along one axis (split, chunk, x[..., a:b]) meet as
pieces and become one array with one cat (fastnn.autograd.pieces, PyTorch's
SplitBackward), and every other pattern (overlaps, other axes, strided slices, a whole
gradient beside the pieces, gaps, leaves) gives the same gradients as before: checked
against float64 gradients written out by hand."""

import numpy as np
import pytest

import fastnn as fnn


def _x(shape=(4, 6, 12), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _run(fn, x, leaf=False):
    """x's gradient of fn(x) (x a leaf used directly, or through x * 1: a node)."""
    t = fnn.tensor(x, requires_grad=True)
    fn(t if leaf else t * 1).backward()
    return t.grad.numpy()


CASES = {
    # name: (loss of a tensor, its float64 gradient)
    "split in three, each weighted": (
        lambda m: sum((p * (i + 1)).sum() for i, p in enumerate(m.split(4, dim=2))),
        lambda x: np.repeat([1.0, 2.0, 3.0], 4)[None, None, :] * np.ones_like(x)),
    "chunk, squares": (
        lambda m: sum((p * p).sum() * (i + 1) for i, p in enumerate(m.chunk(3, 1))),
        lambda x: 2 * x * np.repeat([1.0, 2.0, 3.0], 2)[None, :, None]),
    "two slices with a gap": (
        lambda m: (m[:, :, 2:5] * 3).sum() + (m[:, :, 7:9] ** 2).sum(),
        lambda x: np.concatenate([np.zeros((4, 6, 2)), np.full((4, 6, 3), 3.0),
                                  np.zeros((4, 6, 2)), 2 * x[:, :, 7:9],
                                  np.zeros((4, 6, 3))], axis=2)),
    "overlapping slices": (
        lambda m: (m[:, :, 2:5] * 3).sum() + (m[:, :, 3:9] * 5).sum(),
        lambda x: np.concatenate([np.zeros((4, 6, 2)), np.full((4, 6, 1), 3.0),
                                  np.full((4, 6, 2), 8.0), np.full((4, 6, 4), 5.0),
                                  np.zeros((4, 6, 3))], axis=2)),
    "slices along two axes": (
        lambda m: (m[:, :, 2:5] * 3).sum() + (m[:, 1:3] * 5).sum(),
        lambda x: 3.0 * (np.arange(12) >= 2)[None, None, :] * (np.arange(12) < 5)
        + 5.0 * ((np.arange(6) >= 1) & (np.arange(6) < 3))[None, :, None]
        + 0 * x),
    "a slice and the whole": (
        lambda m: (m[:, :, 2:5] * 3).sum() + (m * 2).sum(),
        lambda x: 2.0 + 3.0 * ((np.arange(12) >= 2) & (np.arange(12) < 5)) + 0 * x),
    "a strided slice beside a run": (
        lambda m: (m[:, :, ::2] * 3).sum() + (m[:, :, 1:4] * 5).sum(),
        lambda x: 3.0 * (np.arange(12) % 2 == 0) + 5.0 * ((np.arange(12) >= 1)
                                                          & (np.arange(12) < 4)) + 0 * x),
    "one piece covering all": (
        lambda m: (m[:, :, 0:12] * 7).sum(),
        lambda x: np.full_like(x, 7.0)),
    "pieces of pieces": (
        lambda m: sum((q * (i + 1)).sum() for i, q in enumerate(m[:, :, 3:9].split(2, 2))),
        lambda x: np.concatenate([np.zeros((4, 6, 3)), np.full((4, 6, 2), 1.0),
                                  np.full((4, 6, 2), 2.0), np.full((4, 6, 2), 3.0),
                                  np.zeros((4, 6, 3))], axis=2)),
}


@pytest.mark.parametrize("leaf", [False, True], ids=["node", "leaf"])
@pytest.mark.parametrize("name", list(CASES))
def test_slice_gradients_match_float64(name, leaf):
    loss, grad = CASES[name]
    x = _x()
    np.testing.assert_allclose(_run(loss, x, leaf), grad(x), rtol=1e-12, atol=1e-12)


def test_a_three_way_split_of_a_node_is_one_cat_and_no_add(monkeypatch):
    """What the pieces save: q, k, v = x.split(...) of a non-leaf makes one cat of the
    three gradients (each had been padded with zeros by its own cat, then two adds)."""
    from fastnn.autograd import hooks

    # (an earlier test's retain_grad leaves the count of hooks up for the process, and the
    # engine then takes its general pass, which keeps no pieces)
    monkeypatch.setattr(hooks.state, "active", 0)
    t = fnn.tensor(_x(), requires_grad=True)
    q, k, v = (t * 1).split(4, dim=2)
    loss = (q * 2 + k * 3 + v * 4).sum()
    ops = t._device.ops
    calls = []
    for hook in ("cat", "add"):  # (spied on from here: the backward's calls)
        real = getattr(ops, hook)
        monkeypatch.setattr(ops, hook, lambda *a, _r=real, _h=hook: calls.append(_h) or _r(*a))
    loss.backward()
    assert calls.count("cat") == 1 and "add" not in calls
    want = np.repeat([2.0, 3.0, 4.0], 4)[None, None, :] * np.ones((4, 6, 12))
    np.testing.assert_array_equal(t.grad.numpy(), want)


def test_pieces_stay_out_of_create_graph_and_anomaly_mode():
    """The general passes (create_graph, anomaly) run the slice rule as before: a second
    derivative through a split is right."""
    x = _x((3, 8))
    t = fnn.tensor(x, requires_grad=True)
    a, b = t.split(4, dim=1)
    loss = (a ** 3).sum() + (b ** 2).sum()
    (g,) = fnn.autograd.grad(loss, [t], create_graph=True)
    g.sum().backward()
    want = np.concatenate([6 * x[:, :4], np.full((3, 4), 2.0)], axis=1)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)
    t2 = fnn.tensor(x, requires_grad=True)
    with fnn.autograd.detect_anomaly():
        a, b = (t2 * 1).split(4, dim=1)
        ((a * 2).sum() + (b * 3).sum()).backward()
    np.testing.assert_array_equal(t2.grad.numpy(), np.repeat([2.0, 3.0], 4)[None, :]
                                  * np.ones((3, 8)))
