"""autograd.grad's newer PyTorch arguments (materialize_grads, is_grads_batched,
only_inputs) and set_detect_anomaly / detect_anomaly(check_nan=...): values against a
hand-computed reference, and against torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn

X = np.array([1.0, -2.0, 3.0])


def _cubes(lib):
    x = lib.tensor(X, requires_grad=True)
    unused = lib.tensor([1.0, 2.0], requires_grad=True)
    return x, unused, x ** 3


def test_materialize_grads_gives_zeros_for_an_unused_input():
    x, unused, y = _cubes(fnn)
    gx, gu = fnn.autograd.grad(y.sum(), [x, unused], materialize_grads=True, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), 3 * X ** 2)
    assert gu.shape == (2,) and gu.dtype == unused.dtype and not gu.requires_grad
    np.testing.assert_array_equal(gu.numpy(), [0.0, 0.0])
    with pytest.raises(ValueError, match="materialize_grads=True needs allow_unused"):
        fnn.autograd.grad(y.sum(), [x, unused], materialize_grads=True,
                          allow_unused=False)
    with pytest.raises(RuntimeError, match="inputs\\[1\\] was not used"):
        fnn.autograd.grad(y.sum(), [x, unused], only_inputs=True)


def test_batched_grad_outputs_give_the_jacobian_rows():
    x, unused, y = _cubes(fnn)
    rows = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.0, -1.0]])
    gx, gu = fnn.autograd.grad(y, [x, unused], grad_outputs=fnn.tensor(rows),
                               is_grads_batched=True, allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), rows * 3 * X ** 2)  # row i: rows[i] @ J
    assert gu is None
    # create_graph: the stacked rows are differentiable again
    x, unused, y = _cubes(fnn)
    (g,) = fnn.autograd.grad(y, x, grad_outputs=fnn.tensor(rows), is_grads_batched=True,
                             create_graph=True)
    (gg,) = fnn.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), rows.sum(0) * 6 * X)
    with pytest.raises(ValueError, match="leading batch dimension"):
        fnn.autograd.grad(y, x, is_grads_batched=True)


def test_grad_arguments_match_torch():
    torch = pytest.importorskip("torch")
    rows = np.array([[1.0, 0.0, 2.0], [0.0, -1.0, 0.0]])
    got, want = [], []
    for lib, out in ((fnn, got), (torch, want)):
        x, unused, y = _cubes(lib)
        gx, gu = lib.autograd.grad(y, [x, unused], grad_outputs=lib.tensor(rows),
                                   is_grads_batched=True, materialize_grads=True)
        out += [gx.detach().numpy(), gu.detach().numpy()]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b)


def test_set_detect_anomaly_as_call_block_and_decorator():
    a = fnn.autograd
    assert not a.is_anomaly_enabled()
    a.set_detect_anomaly(True)
    try:
        assert a.is_anomaly_enabled()
    finally:
        a.set_detect_anomaly(False)
    with a.set_detect_anomaly(True):
        assert a.is_anomaly_enabled()
        x = fnn.tensor([0.0], requires_grad=True)
        with pytest.raises(FloatingPointError):
            (x.log() * 0).sum().backward()
    assert not a.is_anomaly_enabled()

    @a.set_detect_anomaly(True)
    def inside():
        return a.is_anomaly_enabled()

    assert not a.is_anomaly_enabled() and inside() and not a.is_anomaly_enabled()
    with a.detect_anomaly(check_nan=True):
        assert a.is_anomaly_enabled()
    with pytest.raises(TypeError, match="mode must be True or False"):
        a.set_detect_anomaly(1)
