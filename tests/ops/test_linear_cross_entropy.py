"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss (PyTorch 2.13's): the reference
path and the chunked one against a NumPy float64 reference, and against PyTorch where it
is installed."""

import fastnn.nn.functional as F
import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

RNG = np.random.default_rng(0)
N, IN, C = 37, 8, 50
X = RNG.standard_normal((N, IN))
W = RNG.standard_normal((C, IN)) * 0.3
B = RNG.standard_normal(C) * 0.1
KEPT = RNG.integers(0, C, N)
T = KEPT.copy()
T[[3, 20]] = -100  # ignored rows
CW = RNG.random(C) + 0.5
OPTIONS = {"reference": None, "one chunk": {}, "chunks of 5": {"batch_chunk_size": 5},
           "aspect ratio": {"chunking_method": "aspect_ratio:2"}}


def _numpy(reduction, class_weight, grad_out, T=T):
    """(loss, dx, dW, db) in float64 by hand."""
    logits = X @ W.T + B
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    kept = T != -100
    safe = np.where(kept, T, 0)
    scale = kept * (CW[safe] if class_weight else 1.0)
    per = (lse - logits[np.arange(N), safe]) * scale
    probs = np.exp(logits - lse[:, None])
    probs[np.arange(N), safe] -= 1.0
    if reduction == "none":
        loss, row = per, scale * grad_out
    else:
        total = scale.sum() if reduction == "mean" else 1.0
        loss, row = per.sum() / total, scale * grad_out / total
    g = probs * row[:, None]
    return loss, g @ W, g.T @ X, g.sum(0)


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("class_weight, targets", [(False, "all kept"), (False, "some ignored"),
                                                   (True, "some ignored")])
def test_loss_and_gradients_equal_a_float64_reference(options, reduction, class_weight,
                                                      targets):
    """(Every target kept and no class weights is the chunked path's plain case: no row
    weights at all.)"""
    target = KEPT if targets == "all kept" else T
    grad_out = RNG.standard_normal(N) if reduction == "none" else np.float64(1.7)
    x, w, b = (fnn.tensor(a, requires_grad=True) for a in (X, W, B))
    setting = OPTIONS[options]
    loss = F.linear_cross_entropy(
        x, w, fnn.tensor(target), linear_bias=b,
        weight=fnn.tensor(CW) if class_weight else None,
        reduction=reduction,
        options=None if setting is None else nn.LinearCrossEntropyOptions(**setting))
    loss.backward(fnn.tensor(grad_out))
    want = _numpy(reduction, class_weight, grad_out, target)
    for got, expected in zip((loss, x.grad, w.grad, b.grad), want):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_the_chunked_path_keeps_float32_and_unbatched_shapes():
    x = fnn.tensor(X[0].astype(np.float32), requires_grad=True)
    w = fnn.tensor(W.astype(np.float32))
    opts = nn.LinearCrossEntropyOptions()
    for reduction in ("mean", "none"):
        loss = F.linear_cross_entropy(x, w, fnn.tensor(T[0]), reduction=reduction,
                                      options=opts)
        assert loss.shape == () and loss.dtype == fnn.float32
        want = F.cross_entropy((x @ w.T)[None], fnn.tensor(T[:1]), reduction="sum")
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)


def test_a_second_backward_needs_allow_retain_graph():
    x = fnn.tensor(X, requires_grad=True)
    loss = F.linear_cross_entropy(x, fnn.tensor(W), fnn.tensor(T),
                                  options=nn.LinearCrossEntropyOptions(batch_chunk_size=8))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="allow_retain_graph=True"):
        loss.backward()
    kept = nn.LinearCrossEntropyOptions(batch_chunk_size=8, allow_retain_graph=True)
    y = fnn.tensor(X, requires_grad=True)
    loss = F.linear_cross_entropy(y, fnn.tensor(W), fnn.tensor(T), options=kept)
    loss.backward(retain_graph=True)
    first = y.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * first, rtol=1e-12)


def test_unsupported_options_warn_and_take_the_reference_path():
    x = fnn.tensor(X)
    with pytest.warns(UserWarning, match="options.. ignored"):
        got = F.linear_cross_entropy(x, fnn.tensor(W), fnn.tensor(T), label_smoothing=0.1,
                                     options=nn.LinearCrossEntropyOptions())
    want = F.cross_entropy(x @ fnn.tensor(W).T, fnn.tensor(T), label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.linear_cross_entropy(fnn.zeros(2, 3, 4), fnn.zeros(5, 4), fnn.zeros(2)),
     RuntimeError, "dimensionality 1 or 2"),
    (lambda: F.linear_cross_entropy(fnn.zeros(2, 3), fnn.zeros(5, 4), fnn.zeros(2)),
     RuntimeError, "in_features"),
    (lambda: F.linear_cross_entropy(fnn.zeros(3), fnn.zeros(5, 2, 3), fnn.zeros(2)),
     RuntimeError, "requires batched input"),
    (lambda: F.linear_cross_entropy(fnn.zeros(2, 3), fnn.zeros(5, 3), fnn.zeros(2, 5),
                                    ignore_index=1), RuntimeError, "probabilities"),
    (lambda: F.linear_cross_entropy(fnn.zeros(2, 3), fnn.zeros(5, 3), fnn.tensor([0, 7]),
                                    options=nn.LinearCrossEntropyOptions()),
     ValueError, r"targets must be in \[0, 5\)"),
    (lambda: nn.LinearCrossEntropyOptions(chunking_method="wide"), ValueError,
     "chunking_method"),
    (lambda: nn.LinearCrossEntropyOptions(batch_chunk_size=0), ValueError, "positive"),
    (lambda: nn.LinearCrossEntropyOptions(acc_policy="fast"), ValueError, "acc_policy"),
    (lambda: nn.LinearCrossEntropyLoss(3, 5, weight=fnn.ones(4)), RuntimeError,
     "weight shape"),
])
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_module_is_a_linear_head_over_the_function():
    fnn.manual_seed(0)
    loss_fn = nn.LinearCrossEntropyLoss(IN, 5, out_features=(3,), bias=True)
    assert [k for k, _ in loss_fn.named_parameters()] == ["linear.weight", "linear.bias"]
    assert tuple(loss_fn.linear.weight.shape) == (15, IN)
    x = fnn.tensor(X[:6].astype(np.float32))
    target = fnn.tensor(RNG.integers(0, 5, (6, 3)))
    logits = (x @ loss_fn.linear.weight.T + loss_fn.linear.bias).reshape(6, 5, 3)
    np.testing.assert_allclose(loss_fn(x, target).item(),
                               F.cross_entropy(logits, target).item(), rtol=1e-6)


def test_as_pytorchs():
    torch = pytest.importorskip("torch")
    x32, w32 = X.astype(np.float32), W.astype(np.float32)
    for options in (None, {"batch_chunk_size": 4}):
        for reduction in ("mean", "sum", "none"):
            tx, tw = (torch.tensor(a, requires_grad=True) for a in (x32, w32))
            fx, fw = (fnn.tensor(a, requires_grad=True) for a in (x32, w32))
            theirs = torch.nn.functional.linear_cross_entropy(
                tx, tw, torch.tensor(T), reduction=reduction, weight=torch.tensor(CW).float(),
                options=None if options is None else torch.nn.LinearCrossEntropyOptions(
                    **options))
            ours = F.linear_cross_entropy(
                fx, fw, fnn.tensor(T), reduction=reduction,
                weight=fnn.tensor(CW.astype(np.float32)),
                options=None if options is None else nn.LinearCrossEntropyOptions(**options))
            theirs.sum().backward()
            ours.sum().backward()
            assert ours.dtype == fnn.float32 and tuple(ours.shape) == tuple(theirs.shape)
            for a, b in ((ours, theirs), (fx.grad, tx.grad), (fw.grad, tw.grad)):
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(),
                                           rtol=2e-5, atol=1e-6)
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(IN, 5, bias=True, ignore_index=2,
                                             options=torch.nn.LinearCrossEntropyOptions())
    ours = nn.LinearCrossEntropyLoss(IN, 5, bias=True, ignore_index=2,
                                     options=nn.LinearCrossEntropyOptions())
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
