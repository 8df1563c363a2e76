"""nn.AdaptiveLogSoftmaxWithLoss: against a NumPy float64 computation of its definition,
against PyTorch with the weights copied through state_dict (output, loss, log_prob,
predict, input and parameter gradients), finite differences, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-11, atol=1e-12)}


def _log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def reference_log_prob(state, x, cutoffs, n_classes):
    """log p(class | x) of every class, from the definition, in float64."""
    head = x @ state["head.weight"].T + state.get("head.bias", 0.0)
    head = _log_softmax(head)
    short = cutoffs[0]
    pieces = [head[:, :short]]
    bounds = list(cutoffs) + [n_classes]
    for i in range(len(bounds) - 1):
        hidden = x @ state[f"tail.{i}.0.weight"].T
        local = _log_softmax(hidden @ state[f"tail.{i}.1.weight"].T)
        pieces.append(local + head[:, short + i:short + i + 1])
    return np.concatenate(pieces, axis=1)


def _layer(dtype="float64", device="cpu", seed=0, **options):
    options = {"in_features": 12, "n_classes": 15, "cutoffs": [4, 8, 11], "div_value": 2.0,
               **options}
    fnn.manual_seed(seed)
    return nn.AdaptiveLogSoftmaxWithLoss(**options, dtype=getattr(fnn, dtype), device=device)


def test_log_prob_and_forward_match_the_definition():
    layer = _layer(head_bias=True)
    state = {k: np.asarray(v) for k, v in layer.state_dict().items()}
    x = np.random.default_rng(0).normal(size=(9, 12))
    ref = reference_log_prob(state, x, [4, 8, 11], 15)
    log_p = layer.log_prob(fnn.tensor(x)).numpy()
    assert log_p.shape == (9, 15)
    np.testing.assert_allclose(log_p, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, rtol=1e-12)
    target = np.array([0, 3, 4, 7, 8, 10, 11, 14, 2])  # every cluster, both ends of each
    out = layer(fnn.tensor(x), fnn.tensor(target))
    np.testing.assert_allclose(out.output.numpy(), ref[np.arange(9), target], rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -ref[np.arange(9), target].mean(), rtol=1e-12)
    np.testing.assert_array_equal(layer.predict(fnn.tensor(x)).numpy(), ref.argmax(axis=1))
    one = layer(fnn.tensor(x[4]), fnn.tensor(target[4]))  # unbatched: 0-d output and target
    assert one.output.shape == () and one.loss.shape == ()
    np.testing.assert_allclose(one.output.item(), ref[4, target[4]], rtol=1e-12)
    np.testing.assert_allclose(layer.log_prob(fnn.tensor(x[4])).numpy(), ref[4], rtol=1e-12)
    assert layer.predict(fnn.tensor(x[4])).item() == ref[4].argmax()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("targets", ["every cluster", "shortlist only", "one row"])
def test_matches_torch_through_state_dict(targets, dtype, device):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(12, 15, [4, 8, 11], div_value=2.0,
                                                 head_bias=dtype == "float64")
    theirs = theirs.to(getattr(torch, dtype))
    ours = _layer(dtype, device, head_bias=dtype == "float64")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(2)
    target = {"every cluster": np.array([0, 14, 5, 9, 11, 3, 8, 12]),
              "shortlist only": np.array([0, 3, 1, 1]), "one row": np.array([13])}[targets]
    x = rng.normal(size=(len(target), 12)).astype(dtype)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_x = fnn.tensor(x, device=device, requires_grad=True)
    ref = theirs(theirs_x, torch.tensor(target))
    out = ours(ours_x, fnn.tensor(target, device=device))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.numpy(), ref.output.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(out.loss.numpy(), ref.loss.detach().numpy(), **TOL[dtype])
    w = rng.normal(size=len(target)).astype(dtype)
    (ref.loss + (ref.output * torch.tensor(w)).sum()).backward()
    (out.loss + (out.output * fnn.tensor(w, device=device)).sum()).backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **TOL[dtype])
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        expected = grads[name].grad
        if expected is None:  # a cluster no target fell in: PyTorch never ran it
            assert p.grad is None or not p.grad.numpy().any(), name
        else:
            np.testing.assert_allclose(p.grad.numpy(), expected.numpy(), err_msg=name,
                                       **TOL[dtype])
    np.testing.assert_allclose(ours.log_prob(fnn.tensor(x, device=device)).numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy(), **TOL[dtype])


def test_predict_takes_torchs_three_paths():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(6, 9, [3, 6], head_bias=True).double()
    ours = _layer(in_features=6, n_classes=9, cutoffs=[3, 6], div_value=4.0, head_bias=True)
    x = np.random.default_rng(3).normal(size=(6, 6))
    for bias in ([9.0, 0, 0, 0, 0], [0, 0, 0, 9.0, 9.0], [0, 9.0, 0, 0, 0]):
        with torch.no_grad():
            theirs.head.bias.copy_(torch.tensor(bias))
        if bias[1]:  # mixed: some rows' best head entry a cluster, some a class
            with torch.no_grad():
                theirs.head.weight[3].copy_(torch.linspace(-20, 20, 6))
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
        theirs_best = theirs.predict(torch.tensor(x)).numpy()
        best = ours.predict(fnn.tensor(x))
        assert best.dtype == fnn.int64
        np.testing.assert_array_equal(best.numpy(), theirs_best)
        np.testing.assert_array_equal(best.numpy(),
                                      ours.log_prob(fnn.tensor(x)).numpy().argmax(axis=1))
    assert len(set(theirs_best < 3)) == 2  # (the last case did mix the two)


def test_gradients_match_central_differences():
    layer = _layer(in_features=5, n_classes=7, cutoffs=[2, 4], div_value=2.0, head_bias=True)
    rng = np.random.default_rng(4)
    x, target = rng.normal(size=(5, 5)), fnn.tensor([0, 6, 3, 2, 5])
    leaf = fnn.tensor(x, requires_grad=True)
    layer(leaf, target).loss.backward()
    eps = 1e-6

    def loss(values):
        with fnn.no_grad():
            return layer(fnn.tensor(values), target).loss.item()

    numeric = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-6, atol=1e-9)
    weight = layer.tail[1][0].weight  # a tail weight, one entry
    analytic = weight.grad.numpy()[0, 1]
    with fnn.no_grad():
        base = weight.numpy().copy()
        for sign in (1, -1):
            moved = base.copy()
            moved[0, 1] += sign * eps
            weight.copy_(fnn.tensor(moved))
            if sign == 1:
                up = loss(x)
        down = loss(x)
        weight.copy_(fnn.tensor(base))
    np.testing.assert_allclose(analytic, (up - down) / (2 * eps), rtol=1e-6)


def test_layout_repr_and_reset():
    torch = pytest.importorskip("torch")
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 6])
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 6])
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]
    assert (ours.cutoffs, ours.shortlist_size, ours.n_clusters, ours.head_size) == \
        (theirs.cutoffs, theirs.shortlist_size, theirs.n_clusters, theirs.head_size)
    # the last cluster has 8 // 4 ** 2 = 0 hidden features: empty weights, uniform scores
    assert ours.tail[1][0].weight.shape == (0, 8) and ours.tail[1][1].weight.shape == (4, 0)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x, target = np.random.default_rng(5).normal(size=(4, 8)).astype(np.float32), [0, 5, 7, 9]
    ours_x, theirs_x = fnn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, ref = ours(ours_x, fnn.tensor(target)), theirs(theirs_x, torch.tensor(target))
    np.testing.assert_allclose(out.output.numpy(), ref.output.detach().numpy(), **TOL["float32"])
    out.loss.backward()
    ref.loss.backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **TOL["float32"])
    before = ours.tail[0][1].weight.numpy().copy()
    ours.reset_parameters()
    after = ours.tail[0][1].weight.numpy()
    assert not np.array_equal(before, after) and np.abs(after).max() <= 1 / np.sqrt(2)


BAD = {
    "no cutoffs": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, []), ValueError,
                   "length larger than 0"),
    "unsorted": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3]), ValueError, "sorted"),
    "repeated": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 3]), ValueError, "unique"),
    "too large": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10]), ValueError,
                  "n_classes-1 = 9"),
    "div_value": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4], div_value=0),
                  ValueError, "div_value must be a positive number"),
}
CALLS = {
    "float target": (lambda m: m(fnn.zeros(2, 8), fnn.zeros(2)), TypeError, "integer tensor"),
    "batch sizes": (lambda m: m(fnn.zeros(3, 8), fnn.tensor([1, 2])), ValueError,
                    "same size in the batch"),
    "1-D target, 3-D input": (lambda m: m(fnn.zeros(2, 1, 8), fnn.tensor([1, 2])),
                              ValueError, "expects 2D input"),
    "0-d target, 2-D input": (lambda m: m(fnn.zeros(2, 8), fnn.tensor(1)), ValueError,
                              "expects 1D input"),
    "2-D target": (lambda m: m(fnn.zeros(2, 8), fnn.tensor([[1], [2]])), ValueError,
                   "multi-target"),
    "features": (lambda m: m(fnn.zeros(2, 7), fnn.tensor([1, 2])), ValueError,
                 "in_features = 8"),
    "target range": (lambda m: m(fnn.zeros(2, 8), fnn.tensor([1, 10])), ValueError,
                     r"should be in \[0, 9\], but values in range \[1, 10\]"),
    "negative target": (lambda m: m(fnn.zeros(2, 8), fnn.tensor([-1, 2])), ValueError,
                        r"\[-1, 2\]"),
    "log_prob shape": (lambda m: m.log_prob(fnn.zeros(2, 3, 8)), ValueError, "log_prob"),
    "reverse": (lambda m: m.reverse(fnn.zeros(2, 8), fnn.zeros(2)), NotImplementedError,
                "loss.backward"),
}


@pytest.mark.parametrize("name", list(BAD) + list(CALLS))
def test_bad_arguments_raise(name):
    if name in BAD:
        call, error, match = BAD[name]
        with pytest.raises(error, match=match):
            call()
        return
    call, error, match = CALLS[name]
    with pytest.raises(error, match=match):
        call(nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 6]))
