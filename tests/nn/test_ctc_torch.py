"""CTCLoss / F.ctc_loss against PyTorch (log_probs from log_softmax, as documented: losses
and logit gradients agree), the exact gradient w.r.t. raw log_probs against finite
differences and its relation to PyTorch's, and the edges (impossible alignments, empty
targets and inputs, unbatched)."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.helpers import finite_difference
from tests.nn.torch_compare import TOL, devices

torch = pytest.importorskip("torch")
rng = np.random.default_rng(51)
T, N, C = 9, 3, 5
PADDED = np.array([[1, 2, 2, 0], [3, 4, 1, 1], [2, 0, 0, 0]])
TARGET_LENGTHS = np.array([3, 4, 1])
INPUT_LENGTHS = np.array([9, 8, 5])


@pytest.fixture(params=[d if d == "cpu" else pytest.param(d, marks=pytest.mark.slow)
                        for d in devices()])  # other backends: --runslow
def device(request):
    return request.param


def _both(logits, targets, input_lengths, target_lengths, device, dtype="float64", **kw):
    """(torch loss, torch logits grad, fastnn loss, fastnn logits grad) for a random
    weighting of the loss."""
    tx = torch.tensor(logits.astype(dtype), requires_grad=True)
    fx = fnn.tensor(logits.astype(dtype), device=device, requires_grad=True)
    t_loss = torch.nn.CTCLoss(**kw)(tx.log_softmax(-1), torch.tensor(targets),
                                    torch.tensor(input_lengths), torch.tensor(target_lengths))
    f_loss = nn.CTCLoss(**kw)(F.log_softmax(fx, -1), fnn.tensor(targets, device=device),
                              fnn.tensor(input_lengths), fnn.tensor(target_lengths))
    g = rng.standard_normal(t_loss.shape).astype(dtype)
    t_loss.backward(torch.tensor(g))
    f_loss.backward(fnn.tensor(g, device=device))
    return t_loss.detach().numpy(), tx.grad.numpy(), f_loss.numpy(), fx.grad.numpy()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_matches_torch(reduction, dtype, device):
    logits = rng.standard_normal((T, N, C))
    t_loss, t_grad, f_loss, f_grad = _both(logits, PADDED, INPUT_LENGTHS, TARGET_LENGTHS,
                                           device, dtype, reduction=reduction)
    assert f_loss.shape == t_loss.shape
    np.testing.assert_allclose(f_loss, t_loss, **TOL[dtype])
    np.testing.assert_allclose(f_grad, t_grad, **TOL[dtype])


def test_concatenated_targets_blank_and_repeats():
    logits = rng.standard_normal((T, N, C))
    flat = np.concatenate([PADDED[n, :k] for n, k in enumerate(TARGET_LENGTHS)])
    t_loss, t_grad, f_loss, f_grad = _both(logits, flat, INPUT_LENGTHS, TARGET_LENGTHS,
                                           "cpu", reduction="none")
    np.testing.assert_allclose(f_loss, t_loss, **TOL["float64"])
    np.testing.assert_allclose(f_grad, t_grad, **TOL["float64"])
    targets = np.where(PADDED == 4, 0, PADDED)  # blank=4: class 0 is a label now
    t_loss, t_grad, f_loss, f_grad = _both(logits, targets, INPUT_LENGTHS, TARGET_LENGTHS,
                                           "cpu", blank=4, reduction="sum")
    np.testing.assert_allclose(f_loss, t_loss, **TOL["float64"])
    np.testing.assert_allclose(f_grad, t_grad, **TOL["float64"])


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # inf - inf, as torch
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_and_empty_alignments(zero_infinity):
    """[1, 1, 1, 1] needs 7 frames (blanks between repeats): 6 give an inf loss (0 with
    zero_infinity) and a gradient of 0 (torch's: NaN without zero_infinity); no frames and
    no target give 0."""
    logits = rng.standard_normal((6, 4, C))
    targets = np.array([[1, 1, 1, 1], [3, 4, 0, 0], [2, 0, 0, 0], [1, 0, 0, 0]])
    t_loss, t_grad, f_loss, f_grad = _both(
        logits, targets, np.array([6, 0, 5, 0]), np.array([4, 2, 0, 0]), "cpu",
        reduction="none", zero_infinity=zero_infinity)
    np.testing.assert_allclose(f_loss, t_loss, **TOL["float64"])
    assert not np.isnan(f_grad).any() and not f_grad[:, 0].any()
    t_grad = np.where(np.isnan(t_grad), 0.0, t_grad)
    np.testing.assert_allclose(f_grad, t_grad, **TOL["float64"])


def test_unbatched_input():
    logits = rng.standard_normal((7, C))
    tx = torch.tensor(logits, requires_grad=True)
    fx = fnn.tensor(logits, requires_grad=True)
    target = np.array([2, 3, 3])
    t_loss = torch.nn.functional.ctc_loss(tx.log_softmax(-1), torch.tensor(target),
                                          torch.tensor(7), torch.tensor(3), reduction="none")
    f_loss = F.ctc_loss(F.log_softmax(fx, -1), fnn.tensor(target), 7, 3, reduction="none")
    assert f_loss.shape == ()
    np.testing.assert_allclose(f_loss.numpy(), t_loss.detach().numpy(), **TOL["float64"])
    t_loss.backward()
    f_loss.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **TOL["float64"])


def test_gradient_of_raw_log_probs_is_pytorchs():
    """Given raw log_probs (a leaf, not log_softmax outputs), log_probs.grad is PyTorch's:
    the function's own gradient plus exp(log_probs) in each sample's frames (which cancels
    under log_softmax, where both are the true gradient of the logits)."""
    lp_host = rng.standard_normal((5, 2, 4)) - 1.0
    targets, il, tl = np.array([[1, 2], [3, 3]]), np.array([5, 4]), np.array([2, 2])

    def loss_of(values):
        return F.ctc_loss(fnn.tensor(values), fnn.tensor(targets), il, tl,
                          reduction="none").numpy()

    numeric, weights = finite_difference(loss_of, [lp_host], 0)
    lp = fnn.tensor(lp_host, requires_grad=True)
    F.ctc_loss(lp, fnn.tensor(targets), il, tl, reduction="none").backward(fnn.tensor(weights))
    t_lp = torch.tensor(lp_host, requires_grad=True)
    torch.nn.functional.ctc_loss(t_lp, torch.tensor(targets), torch.tensor(il),
                                 torch.tensor(tl), reduction="none").backward(
        torch.tensor(weights))
    np.testing.assert_allclose(lp.grad.numpy(), t_lp.grad.numpy(), rtol=1e-9, atol=1e-12)
    running = (np.arange(5)[:, None] < il)[..., None]
    np.testing.assert_allclose(lp.grad.numpy() - running * weights[:, None] * np.exp(lp_host),
                               numeric, rtol=1e-6, atol=1e-8)


def test_bad_arguments():
    lp = F.log_softmax(fnn.randn(6, 2, 4, dtype=fnn.float64), -1)
    targets = fnn.tensor([[1, 2], [3, 1]])
    with pytest.raises(ValueError, match="other than blank"):
        F.ctc_loss(lp, fnn.tensor([[0, 2], [3, 1]]), [6, 6], [2, 2])
    with pytest.raises(ValueError, match=r"input_lengths \[7, 6\] must lie in \[0, 6\]"):
        F.ctc_loss(lp, targets, [7, 6], [2, 2])
    with pytest.raises(ValueError, match="input_lengths must hold 2 integers"):
        F.ctc_loss(lp, targets, [6], [2, 2])
    with pytest.raises(ValueError, match="target_lengths at most 2"):
        F.ctc_loss(lp, targets, [6, 6], [3, 2])
    with pytest.raises(ValueError, match="blank"):
        nn.CTCLoss(blank=4)(lp, targets, [6, 6], [2, 2])
    with pytest.raises(ValueError, match="reduction"):
        F.ctc_loss(lp, targets, [6, 6], [2, 2], reduction="avg")
