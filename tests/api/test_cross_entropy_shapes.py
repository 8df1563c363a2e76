"""cross_entropy with PyTorch's other shapes: (C,) logits, and (N, C, d1, ...) with a class
per position, against a float64 NumPy reference and, where installed, PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F


def _devices():
    names = {b.name for b in fnn.backends() if b.available}
    return [d for d in ("cpu", "opencl") if d in names]


def _reference(logits, targets):
    """Per-element loss (targets' shape) and the gradient of its sum, class axis 1."""
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    onehot = np.moveaxis(np.eye(logits.shape[1])[targets], -1, 1)
    return -(logp * onehot).sum(axis=1), np.exp(logp) - onehot


CASES = [((5, 4), (5,)), ((2, 3, 7), (2, 7)), ((2, 3, 4, 5), (2, 4, 5)), ((3, 6, 1), (3, 1))]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape,target_shape", CASES)
def test_matches_the_float64_reference(device, reduction, shape, target_shape):
    rng = np.random.default_rng(len(shape))
    host = rng.standard_normal(shape) * 3
    labels = rng.integers(0, shape[1], target_shape)
    logits = fnn.tensor(host, requires_grad=True, device=device)
    loss = F.cross_entropy(logits, fnn.tensor(labels, device=device), reduction=reduction)
    per, grad = _reference(host, labels)
    want = {"none": per, "sum": per.sum(), "mean": per.mean()}[reduction]
    assert loss.shape == np.shape(want)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-10)
    loss.sum().backward() if reduction == "none" else loss.backward()
    scale = per.size if reduction == "mean" else 1
    np.testing.assert_allclose(logits.grad.numpy(), grad / scale, rtol=1e-9, atol=1e-12)


def test_one_dimensional_logits_take_a_0d_target():
    host = np.array([0.5, -1.0, 2.0])
    logits = fnn.tensor(host, requires_grad=True)
    loss = F.cross_entropy(logits, fnn.tensor(np.array(2)))
    per, grad = _reference(host[None], np.array([2]))
    assert loss.shape == ()
    np.testing.assert_allclose(loss.item(), per[0], rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(logits.grad.numpy(), grad[0], rtol=1e-12)


@pytest.mark.parametrize("logits_shape,targets_shape", [((2, 3, 7), (2,)), ((2, 3, 7), (7, 2)),
                                                        ((3,), (1,)), ((2, 3, 4), (2, 4, 1))])
def test_mismatched_targets_name_the_shape_they_need(logits_shape, targets_shape):
    logits = fnn.tensor(np.zeros(logits_shape))
    with pytest.raises(ValueError, match="without the class axis 1"):
        F.cross_entropy(logits, fnn.tensor(np.zeros(targets_shape, dtype=np.int64)))


def test_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    host, labels = rng.standard_normal((4, 5, 6)), rng.integers(0, 5, (4, 6))
    logits = fnn.tensor(host, requires_grad=True)
    F.cross_entropy(logits, fnn.tensor(labels)).backward()
    t = torch.tensor(host, requires_grad=True)
    torch.nn.functional.cross_entropy(t, torch.tensor(labels)).backward()
    np.testing.assert_allclose(logits.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_float64_soft_labels_with_float32_logits_promote_as_pytorch(smoothing):
    """Soft labels made with NumPy are float64; PyTorch's cross_entropy against them with
    float32 logits promotes to float64. fastnn refused the two dtypes."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    host = rng.standard_normal((4, 5)).astype(np.float32)
    labels = rng.dirichlet(np.ones(5), size=4)  # float64
    results = []
    for lib, functional in ((fnn, F), (torch, torch.nn.functional)):
        logits = lib.tensor(host, requires_grad=True)
        loss = functional.cross_entropy(logits, lib.tensor(labels), label_smoothing=smoothing)
        loss.backward()
        results.append((loss, logits.grad))
    (ours, our_grad), (theirs, their_grad) = results
    assert ours.dtype is fnn.float64 and theirs.dtype == torch.float64
    assert our_grad.dtype is fnn.float32
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(our_grad.numpy(), their_grad.numpy(), rtol=1e-5, atol=1e-7)
