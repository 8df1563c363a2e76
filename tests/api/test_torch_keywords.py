"""PyTorch's keyword arguments that scripts pass: ``alpha=`` of add and sub,
``rounding_mode=`` of div, softplus's ``beta=``/``threshold=``, cross_entropy's ``target=``
and its class-probability targets. References are NumPy float64 (and PyTorch where it is
installed)."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

A = np.array([7, -7, 7, -7, 0, 6, -1], np.int64)
B = np.array([2, 2, -2, -2, 3, -3, 5], np.int64)


def test_add_and_sub_scale_the_other_operand_by_alpha():
    x, y = np.array([1.5, -2.0, 3.0]), np.array([0.25, 4.0, -1.0])
    np.testing.assert_array_equal(fnn.tensor(x).add(fnn.tensor(y), alpha=2).numpy(), x + 2 * y)
    np.testing.assert_array_equal(fnn.sub(fnn.tensor(x), fnn.tensor(y), alpha=-0.5).numpy(),
                                  x + 0.5 * y)
    np.testing.assert_array_equal(fnn.add(fnn.tensor(x), 3, alpha=2).numpy(), x + 6)
    a = fnn.tensor(x, requires_grad=True)
    b = fnn.tensor(y, requires_grad=True)
    a.sub(b, alpha=3).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [-3.0, -3.0, -3.0])
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="add: alpha must be a number"):
        fnn.tensor(x).add(fnn.tensor(y), alpha="2")


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes_on_integers_and_floats(mode):
    rounding = {None: lambda q: q, "trunc": np.trunc, "floor": np.floor}[mode]
    exact = rounding(A / B)
    out = fnn.div(fnn.tensor(A), fnn.tensor(B), rounding_mode=mode)
    assert out.dtype == (fnn.float32 if mode is None else fnn.int64)
    np.testing.assert_allclose(out.numpy(), exact, rtol=1e-6)
    np.testing.assert_array_equal(fnn.tensor(A).div(3, rounding_mode=mode).numpy()
                                  if mode else 0, rounding(A / 3).astype(np.int64) if mode else 0)
    af, bf = A + 0.5, B.astype(np.float64)
    np.testing.assert_array_equal(
        fnn.tensor(af).div(fnn.tensor(bf), rounding_mode=mode).numpy(), rounding(af / bf))
    if torch is not None:
        theirs = torch.div(torch.tensor(A), torch.tensor(B), rounding_mode=mode)
        np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-6)
        assert str(theirs.dtype).split(".")[1] == out.dtype.name


def test_div_refuses_an_unknown_rounding_mode():
    with pytest.raises(ValueError, match="rounding_mode must be None, 'trunc' or 'floor'"):
        fnn.tensor([1.0]).div(2.0, rounding_mode="round")


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 20.0), (1.0, 3.0)])
def test_softplus_beta_and_threshold(beta, threshold):
    z = np.linspace(-30, 30, 25)
    soft = np.logaddexp(0.0, beta * z) / beta
    expected = np.where(beta * z > threshold, z, soft)
    x = fnn.tensor(z, requires_grad=True)
    out = F.softplus(x, beta=beta, threshold=threshold)
    # the defaults keep the stable hook, x + log1p(exp(-x)) beyond 20: exp(-20) = 2e-9 off
    atol = 3e-9 if (beta, threshold) == (1.0, 20.0) else 1e-10
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=atol)
    np.testing.assert_allclose(fnn.nn.Softplus(beta, threshold)(fnn.tensor(z)).numpy(),
                               expected, rtol=1e-12, atol=atol)
    out.sum().backward()
    sig = 1.0 / (1.0 + np.exp(-beta * z))
    np.testing.assert_allclose(x.grad.numpy(), np.where(beta * z > threshold, 1.0, sig),
                               rtol=1e-9, atol=atol)
    if torch is not None:
        theirs = TF.softplus(torch.tensor(z), beta=beta, threshold=threshold)
        np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12, atol=atol)


def _log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3, 3), (5,)])
@pytest.mark.parametrize("options", [{}, {"weight": True}, {"label_smoothing": 0.2},
                                     {"reduction": "none"},
                                     {"reduction": "sum", "weight": True,
                                      "label_smoothing": 0.1}])
def test_cross_entropy_against_class_probabilities(shape, options):
    rng = np.random.default_rng(len(shape))
    axis = 1 if len(shape) > 1 else 0
    x = rng.standard_normal(shape)
    t = rng.random(shape)
    t /= t.sum(axis, keepdims=True)
    w = rng.random(5) + 0.5
    smoothing = options.get("label_smoothing", 0.0)
    reduction = options.get("reduction", "mean")
    weight = w if options.get("weight") else np.ones(5)
    smoothed = t * (1 - smoothing) + smoothing / 5
    per = -(_log_softmax(x, axis) * smoothed
            * weight.reshape((5,) + (1,) * (len(shape) - axis - 1))).sum(axis)
    expected = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    kwargs = dict(reduction=reduction, label_smoothing=smoothing,
                  weight=fnn.tensor(w) if options.get("weight") else None)
    logits = fnn.tensor(x, requires_grad=True)
    out = F.cross_entropy(logits, target=fnn.tensor(t), **kwargs)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    if torch is not None:
        kwargs["weight"] = torch.tensor(w) if options.get("weight") else None
        theirs_x = torch.tensor(x, requires_grad=True)
        theirs = TF.cross_entropy(theirs_x, torch.tensor(t), **kwargs)
        out.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(logits.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10,
                                   atol=1e-14)


def test_probability_targets_must_match_the_logits():
    with pytest.raises(TypeError, match="int64 or int32 .* or class probabilities of the"):
        F.cross_entropy(fnn.ones(4, 5), fnn.ones(4, 4) / 4)
    # float32 logits and float64 probabilities promote to float64, as PyTorch's (whose
    # log-softmax stays in the logits' float32: 1.609437942504883 there and here)
    mixed = F.cross_entropy(fnn.ones(4, 5), fnn.ones(4, 5, dtype=fnn.float64) / 5)
    assert mixed.dtype == fnn.float64 and mixed.item() == pytest.approx(np.log(5), rel=1e-7)


def test_class_index_losses_take_target_by_keyword():
    x = np.log(np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]))
    y = np.array([1, 0])
    assert F.nll_loss(fnn.tensor(x), target=fnn.tensor(y)).item() == pytest.approx(
        -(np.log(0.5) + np.log(0.6)) / 2, rel=1e-12)
    assert F.cross_entropy(fnn.tensor(x), target=fnn.tensor(y)).item() == pytest.approx(
        -(np.log(0.5) + np.log(0.6)) / 2, rel=1e-12)
