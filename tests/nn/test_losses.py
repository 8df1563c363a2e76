"""Losses against NumPy float64 references, for every reduction, and their gradients
against central finite differences."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(0)


def reduce(per, reduction):
    return {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]


def ref_cross_entropy(logits, targets):
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(targets)), targets]


def ref_mse(pred, target):
    return (pred - target) ** 2


def ref_huber(pred, target, delta=1.0):
    d = np.abs(pred - target)
    return np.where(d <= delta, 0.5 * d**2, delta * (d - 0.5 * delta))


def ref_bce(logits, target):
    p = 1 / (1 + np.exp(-logits))
    return -(target * np.log(p) + (1 - target) * np.log(1 - p))


def _cases():
    logits = rng.standard_normal((6, 4)) * 3
    targets = rng.integers(0, 4, size=6)
    pred, target = rng.standard_normal((5, 3)) * 2, rng.standard_normal((5, 3))
    probs = rng.uniform(size=(5, 3))
    return {
        "cross_entropy": (F.cross_entropy, ref_cross_entropy, logits, targets.astype(np.int64)),
        "mse_loss": (F.mse_loss, ref_mse, pred, target),
        "huber_loss": (F.huber_loss, ref_huber, pred, target),
        "bce_with_logits": (F.binary_cross_entropy_with_logits, ref_bce, pred, probs),
    }


CASES = _cases()  # NumPy only: tensors are made inside each test, on the current device


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_numpy_and_finite_differences(name, reduction):
    fn, ref, x_np, target_np = CASES[name]
    x = fnn.tensor(x_np, requires_grad=True)
    target_t = fnn.tensor(target_np)
    out = fn(x, target_t, reduction=reduction)
    expected = reduce(ref(x_np, target_np), reduction)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)

    weights = rng.standard_normal(np.shape(expected))
    (out * fnn.tensor(weights)).sum().backward()
    fd = np.zeros_like(x_np)
    for i in np.ndindex(x_np.shape):
        up, down = x_np.copy(), x_np.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        fd[i] = (np.sum(reduce(ref(up, target_np), reduction) * weights)
                 - np.sum(reduce(ref(down, target_np), reduction) * weights)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-8)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = fnn.tensor(np.array([[1000.0, 0.0, -1000.0], [0.0, 1e4, 0.0]]), requires_grad=True)
    loss = F.cross_entropy(logits, fnn.tensor(np.array([0, 0])), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [0.0, 1e4])
    loss.sum().backward()
    assert np.isfinite(logits.grad.numpy()).all()


def test_bce_with_logits_is_stable_for_huge_logits():
    x = fnn.tensor(np.array([800.0, -800.0]))
    loss = F.binary_cross_entropy_with_logits(x, fnn.tensor(np.array([0.0, 1.0])),
                                              reduction="none")
    np.testing.assert_allclose(loss.numpy(), [800.0, 800.0])


def test_huber_delta():
    pred, target = rng.standard_normal(10) * 3, np.zeros(10)
    out = F.huber_loss(fnn.tensor(pred), fnn.tensor(target), reduction="none", delta=0.5)
    np.testing.assert_allclose(out.numpy(), ref_huber(pred, target, 0.5), rtol=1e-12)


def test_targets_out_of_range_raise_a_clear_error():
    logits = fnn.randn((3, 4))
    with pytest.raises(ValueError, match=r"targets must be in \[0, 4\), got values in \[0, 4\]"):
        F.cross_entropy(logits, fnn.tensor(np.array([0, 1, 4])))
    with pytest.raises(ValueError, match=r"got values in \[-1, 1\]"):
        F.cross_entropy(logits, fnn.tensor(np.array([0, 1, -1])))
    with pytest.raises(TypeError, match="int64 or int32"):
        F.cross_entropy(logits, fnn.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"targets must have shape \(3,\)"):
        F.cross_entropy(logits, fnn.tensor(np.array([0, 1])))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_a_target_of_another_shape_broadcasts_with_pytorchs_warning(name):
    """As PyTorch's: (3, 2) predictions against a (2,) target broadcast, with the warning
    that this is likely a mistake; the value is the loss of the broadcast pair."""
    rng = np.random.default_rng(0)
    pred, target = rng.standard_normal((3, 2)), rng.standard_normal(2)
    with pytest.warns(UserWarning, match="different to the input size"):
        got = getattr(F, name)(fnn.tensor(pred), fnn.tensor(target))
    want = getattr(F, name)(fnn.tensor(pred), fnn.tensor(np.broadcast_to(target, (3, 2))))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning):
        theirs = getattr(torch.nn.functional, name)(torch.tensor(pred), torch.tensor(target))
    np.testing.assert_allclose(got.numpy(), theirs.numpy(), rtol=1e-12)


def test_bad_reduction_and_shape_mismatch_raise():
    x = fnn.randn((3, 2))
    with pytest.raises(ValueError, match="reduction must be one of"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="do not broadcast"):  # (shapes that cannot meet)
        F.mse_loss(x, fnn.randn((2, 3)))
    with pytest.raises(ValueError, match="differ in shape"):  # (as PyTorch: no broadcasting)
        F.binary_cross_entropy(fnn.rand((3, 2)), fnn.rand((2,)))
    with pytest.raises(ValueError, match="reduction must be one of"):
        F.cross_entropy(x, fnn.tensor(np.array([0, 1, 1])), reduction="avg")
