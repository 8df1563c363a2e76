"""The losses take PyTorch's whole signature: the deprecated ``size_average`` and ``reduce``
flags where PyTorch has them (so a positional call binds as PyTorch's does), and the
elementwise ``weight`` of mse_loss, l1_loss and huber_loss. Each against torch."""

import inspect
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

rng = np.random.default_rng(11)


def _pair(*shape, positive=False):
    host = rng.random(shape) + 0.05 if positive else rng.normal(size=shape)
    return fnn.tensor(host), torch.tensor(host)


def _both(ours, theirs):
    """(ours, theirs) results, each call's warnings recorded."""
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        a = ours()
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        b = theirs()
    return a, b, our_warnings, their_warnings


x, tx = _pair(4, 3)
y, ty = _pair(4, 3)
p, tp = _pair(4, 3, positive=True)
labels = np.array([0, 2, 1, 2])
c, tc = fnn.tensor(labels), torch.tensor(labels)
sign = np.array([1.0, -1.0, 1.0, -1.0])
s1, ts1 = fnn.tensor(sign), torch.tensor(sign)
x1, tx1 = _pair(4)
x2, tx2 = _pair(4)
binary = (rng.random((4, 3)) > 0.5).astype(float)
b, tb = fnn.tensor(binary), torch.tensor(binary)

# name -> (our positional args before the flags, theirs): the first flag follows them
CALLS = {
    "mse_loss": ((x, y), (tx, ty)),
    "l1_loss": ((x, y), (tx, ty)),
    "smooth_l1_loss": ((x, y), (tx, ty)),
    "kl_div": ((x.log_softmax(1), p), (tx.log_softmax(1), tp)),
    "binary_cross_entropy": ((p.clamp(max=0.95), b, None), (tp.clamp(max=0.95), tb, None)),
    "binary_cross_entropy_with_logits": ((x, b, None), (tx, tb, None)),
    "cross_entropy": ((x, c, None), (tx, tc, None)),
    "nll_loss": ((x.log_softmax(1), c, None), (tx.log_softmax(1), tc, None)),
    "soft_margin_loss": ((x1, s1), (tx1, ts1)),
    "hinge_embedding_loss": ((x1, s1, 1.0), (tx1, ts1, 1.0)),
    "margin_ranking_loss": ((x1, x2, s1, 0.1), (tx1, tx2, ts1, 0.1)),
    "multilabel_soft_margin_loss": ((x, b, None), (tx, tb, None)),
    "multi_margin_loss": ((x, c, 1, 1.0, None), (tx, tc, 1, 1.0, None)),
    "triplet_margin_loss": ((x, y, p, 1.0, 2.0, 1e-6, False), (tx, ty, tp, 1.0, 2.0, 1e-6,
                                                              False)),
    "cosine_embedding_loss": ((x, y, s1, 0.0), (tx, ty, ts1, 0.0)),
}
# PyTorch puts ignore_index between the two flags of these
IGNORE_BETWEEN = {"cross_entropy", "nll_loss"}
FLAGS = [(None, False), (False, None), (False, False), (True, False), (None, None)]


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("size_average,reduce", FLAGS)
def test_legacy_flags_bind_by_position_and_mean_what_pytorchs_do(name, size_average, reduce):
    ours_args, their_args = CALLS[name]
    middle = (-100,) if name in IGNORE_BETWEEN else ()
    ours = getattr(F, name)(*ours_args, size_average, *middle, reduce)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(TF, name)(*their_args, size_average, *middle, reduce)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_our_signatures_put_the_flags_where_pytorchs_do(name):
    ours = list(inspect.signature(getattr(F, name)).parameters)
    theirs = list(inspect.signature(getattr(TF, name)).parameters)
    assert ours.index("size_average") == theirs.index("size_average")
    assert ours.index("reduce") == theirs.index("reduce")
    assert ours[ours.index("size_average"):] == theirs[theirs.index("size_average"):]


def test_a_flag_warns_at_the_callers_line_as_pytorch_and_a_string_there_is_refused():
    ours, theirs, our_warnings, their_warnings = _both(
        lambda: F.mse_loss(x, y, size_average=False), lambda: TF.mse_loss(tx, ty,
                                                                         size_average=False))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    assert [str(w.message) for w in our_warnings] == [str(w.message) for w in their_warnings]
    assert our_warnings[0].filename == __file__
    # fastnn's older signatures had reduction third: a string there is named, not bound
    with pytest.raises(TypeError, match="size_average='sum'.*pass reduction='sum' by keyword"):
        F.mse_loss(x, y, "sum")
    with pytest.raises(TypeError, match="reduce='none'"):
        F.nll_loss(x, c, None, None, -100, "none")


MODULES = [("MSELoss", (), ()), ("L1Loss", (), ()), ("SmoothL1Loss", (), ()),
           ("KLDivLoss", (), ()), ("BCELoss", (None,), ()), ("BCEWithLogitsLoss", (None,), ()),
           ("CrossEntropyLoss", (None,), (-100,)), ("NLLLoss", (None,), (-100,)),
           ("SoftMarginLoss", (), ()), ("HingeEmbeddingLoss", (1.0,), ()),
           ("MarginRankingLoss", (0.1,), ()), ("MultiLabelSoftMarginLoss", (None,), ()),
           ("MultiLabelMarginLoss", (), ()), ("MultiMarginLoss", (1, 1.0, None), ()),
           ("TripletMarginLoss", (1.0, 2.0, 1e-6, False), ()),
           ("CosineEmbeddingLoss", (0.0,), ()), ("PoissonNLLLoss", (True, False), (1e-8,))]


@pytest.mark.parametrize("name,before,middle", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_take_the_flags_in_pytorchs_positions(name, before, middle):
    for size_average, reduce in FLAGS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = getattr(nn, name)(*before, size_average, *middle, reduce)
            theirs = getattr(torch.nn, name)(*before, size_average, *middle, reduce)
        assert ours.reduction == theirs.reduction, (size_average, reduce)
    ours = list(inspect.signature(getattr(nn, name)).parameters)
    theirs = list(inspect.signature(getattr(torch.nn, name)).parameters)
    assert ours == theirs


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_elementwise_weight_as_pytorch(name, reduction):
    """PyTorch's weight= of mse_loss and l1_loss: "mean" divides by the weights' sum;
    huber_loss's "mean" divides by the count. Gradients reach input, target and weight."""
    host_w = np.random.default_rng(5).random((4, 3))  # (not the module's rng: test order)
    w = fnn.tensor(host_w, requires_grad=True)
    tw = torch.tensor(host_w, requires_grad=True)
    # every fastnn tensor made here: the module's x and y were made at collection, and a
    # test that refreshes the backend registry (tests/api/test_registry.py) in the same
    # worker before this one gives new tensors another cpu Device object
    a, ta = fnn.tensor(x.numpy(), requires_grad=True), tx.clone().requires_grad_(True)
    b = fnn.tensor(y.numpy())
    ours = getattr(F, name)(a, b, reduction=reduction, weight=w)
    theirs = getattr(TF, name)(ta, ty, reduction=reduction, weight=tw)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-15)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match=r"weight must have the input's shape \(4, 3\)"):
        getattr(F, name)(a, b, weight=fnn.ones((3,)))


# PyTorch's AdaptiveLogSoftmaxWithLoss names them input_ and target_; nobody passes those
LOSS_MODULES = sorted(n for n in dir(torch.nn) if n.endswith("Loss") and hasattr(nn, n)
                      and n != "AdaptiveLogSoftmaxWithLoss")


@pytest.mark.parametrize("name", LOSS_MODULES)
def test_loss_modules_forward_takes_pytorchs_argument_names(name):
    """The knowledge distillation tutorial calls cosine_loss(a, b, target=ones); the
    three-tensor losses named their arguments a, b, c."""
    ours = list(inspect.signature(getattr(nn, name).forward).parameters)
    assert ours == list(inspect.signature(getattr(torch.nn, name).forward).parameters)


def test_pair_and_triplet_losses_by_keyword_as_pytorch():
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    results = []
    for lib in (fnn, torch):
        t = [lib.tensor(v) for v in (a, b, y)]
        results.append([
            lib.nn.CosineEmbeddingLoss(margin=0.1)(t[0], t[1], target=t[2]),
            lib.nn.functional.cosine_embedding_loss(input1=t[0], input2=t[1], target=t[2]),
            lib.nn.MarginRankingLoss()(input1=t[0][:, 0], input2=t[1][:, 0], target=t[2]),
            lib.nn.TripletMarginLoss()(anchor=t[0], positive=t[1], negative=t[0] * 2),
            lib.nn.PoissonNLLLoss()(log_input=t[0], target=t[1].abs()),
        ])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
