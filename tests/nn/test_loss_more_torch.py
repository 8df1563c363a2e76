"""Issue 21's losses (functional and modules) and parameter-free layers against PyTorch:
values and input gradients for every reduction."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def n(*shape):
    return rng.standard_normal(shape)


def sign(*shape):
    return rng.choice([-1.0, 1.0], shape)


def _run(ours_fn, theirs_fn, arrays, grads):
    ours_in = [fnn.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    theirs_in = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    ours, theirs = ours_fn(*ours_in), theirs_fn(*theirs_in)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
    weight = rng.standard_normal(theirs.shape)
    (ours * fnn.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


# (functional name, module name, arrays, which need a gradient, keyword arguments)
LOSSES = [
    ("margin_ranking_loss", "MarginRankingLoss", (n(5), n(5), sign(5)), (1, 1, 0),
     dict(margin=0.3)),
    ("triplet_margin_loss", "TripletMarginLoss", (n(5, 3), n(5, 3), n(5, 3)), (1, 1, 1), {}),
    ("triplet_margin_loss", "TripletMarginLoss", (n(5, 3), n(5, 3), n(5, 3)), (1, 1, 1),
     dict(swap=True, p=1, margin=0.5)),
    ("triplet_margin_loss", "TripletMarginLoss", (n(3), n(3), n(3)), (1, 1, 1), {}),
    ("cosine_embedding_loss", "CosineEmbeddingLoss", (n(5, 3), n(5, 3), sign(5)), (1, 1, 0),
     dict(margin=0.2)),
    ("soft_margin_loss", "SoftMarginLoss", (n(4, 3), sign(4, 3)), (1, 0), {}),
    ("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss",
     (n(4, 3), rng.integers(0, 2, (4, 3)).astype(float)), (1, 0), {}),
    ("multilabel_margin_loss", "MultiLabelMarginLoss",
     (n(3, 4), np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, 1, -1, -1]])), (1, 0), {}),
    ("multilabel_margin_loss", "MultiLabelMarginLoss", (n(4), np.array([2, -1, 0, 1])),
     (1, 0), {}),
    ("hinge_embedding_loss", "HingeEmbeddingLoss", (n(4, 3), sign(4, 3)), (1, 0),
     dict(margin=0.7)),
    ("poisson_nll_loss", "PoissonNLLLoss", (n(4, 3), np.abs(n(4, 3)) * 3), (1, 0), {}),
    ("poisson_nll_loss", "PoissonNLLLoss", (np.abs(n(4, 3)) + 0.1, np.abs(n(4, 3)) * 3),
     (1, 1), dict(log_input=False, full=True)),  # the Stirling term reaches the target
    ("gaussian_nll_loss", "GaussianNLLLoss", (n(4, 3), n(4, 3), np.abs(n(4, 3))), (1, 1, 1),
     {}),
    ("gaussian_nll_loss", "GaussianNLLLoss", (n(4, 3), n(4, 3), np.abs(n(4, 1)) * 1e-7),
     (1, 1, 1), dict(full=True)),
    ("gaussian_nll_loss", "GaussianNLLLoss", (n(4, 3), n(4, 3), np.abs(n(4))), (1, 1, 1), {}),
    ("multi_margin_loss", "MultiMarginLoss", (n(4, 5), np.array([0, 3, 4, 3])), (1, 0), {}),
    ("multi_margin_loss", "MultiMarginLoss", (n(4, 5), np.array([0, 3, 4, 3])), (1, 0),
     dict(p=2, margin=0.5)),
    ("multi_margin_loss", "MultiMarginLoss", (n(5), np.array(2)), (1, 0), {}),
    ("multi_margin_loss", "MultiMarginLoss", (n(5), np.array([2])), (1, 0), {}),
    ("triplet_margin_with_distance_loss", "TripletMarginWithDistanceLoss",
     (n(5, 3), n(5, 3), n(5, 3)), (1, 1, 1), dict(swap=True, margin=0.5)),
    ("kl_div", "KLDivLoss", (np.log(np.abs(n(4, 3))), np.abs(n(4, 3))), (1, 1), {}),
    ("kl_div", "KLDivLoss", (np.log(np.abs(n(4, 3))), n(4, 3)), (1, 1),
     dict(log_target=True)),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", LOSSES, ids=[f"{c[0]}{c[4] or ''}" for c in LOSSES])
def test_loss_matches_torch(case, reduction):
    name, module, arrays, grads, kwargs = case
    grads = [bool(g) for g in grads]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note on kl_div's 'mean'
        _run(lambda *t: getattr(F, name)(*t, reduction=reduction, **kwargs),
             lambda *t: getattr(torch.nn.functional, name)(*t, reduction=reduction, **kwargs),
             arrays, grads)
        _run(getattr(nn, module)(reduction=reduction, **kwargs),
             getattr(torch.nn, module)(reduction=reduction, **kwargs), arrays, grads)


def test_kl_div_batchmean_and_weighted_multilabel():
    x, t = np.log(np.abs(n(4, 3))), np.abs(n(4, 3))
    _run(nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"),
         (x, t), (True, False))
    w = np.abs(n(3))
    _run(lambda a, b: F.multilabel_soft_margin_loss(a, b, weight=fnn.tensor(w)),
         lambda a, b: torch.nn.functional.multilabel_soft_margin_loss(a, b, torch.tensor(w)),
         (n(4, 3), rng.integers(0, 2, (4, 3)).astype(float)), (True, False))


def test_weighted_multi_margin_and_custom_distance():
    w = np.abs(n(5))
    _run(nn.MultiMarginLoss(weight=fnn.tensor(w)), torch.nn.MultiMarginLoss(weight=torch.tensor(w)),
         (n(4, 5), np.array([0, 3, 4, 3])), (True, False))
    _run(nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: ((a - b) ** 2).sum(-1)),
         torch.nn.TripletMarginWithDistanceLoss(
             distance_function=lambda a, b: ((a - b) ** 2).sum(-1)),
         (n(5, 3), n(5, 3), n(5, 3)), (True, True, True))


def test_loss_refusals():
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(fnn.zeros(2, 3), fnn.zeros(2, 3), fnn.tensor(-np.ones((2, 3))))
    with pytest.raises(ValueError, match="target index 5 is out of range"):
        F.multilabel_margin_loss(fnn.zeros(1, 3), fnn.tensor([[5, -1, 0]]))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MarginRankingLoss(reduction="avg")


# ---------------------------------------------------------------- parameter-free layers

LAYERS = [
    ("Upsample", dict(scale_factor=2, mode="nearest"), [(2, 3, 4, 5)]),
    ("Upsample", dict(size=(5, 3), mode="bilinear", align_corners=False), [(2, 3, 4, 5)]),
    ("Upsample", dict(scale_factor=1.5, mode="linear", align_corners=True), [(2, 3, 4)]),
    ("UpsamplingNearest2d", dict(scale_factor=3), [(1, 2, 3, 2)]),
    ("UpsamplingBilinear2d", dict(size=(4, 5)), [(1, 2, 3, 2)]),
    ("PixelShuffle", dict(upscale_factor=3), [(2, 9, 2, 3)]),
    ("PixelUnshuffle", dict(downscale_factor=2), [(2, 1, 4, 6)]),
    ("Unflatten", dict(dim=1, unflattened_size=(2, 4)), [(3, 8)]),
    ("Softmax", dict(dim=1), [(3, 4, 2)]),
    ("Softmax", dict(dim=-1), [(3, 4)]),
    ("LogSoftmax", dict(dim=0), [(3, 4)]),
    ("Softmin", dict(dim=1), [(3, 4, 2)]),
    ("Softmax2d", {}, [(2, 3, 2, 2)]),
    ("CosineSimilarity", dict(dim=-1), [(3, 4), (3, 4)]),
    ("PairwiseDistance", dict(p=1.5, keepdim=True), [(3, 4), (3, 4)]),
    ("Identity", {}, [(3, 4)]),
    ("Unfold", dict(kernel_size=(2, 3), padding=1, stride=2), [(2, 2, 4, 5)]),
    ("ChannelShuffle", dict(groups=3), [(2, 6, 2, 2)]),
    ("LocalResponseNorm", dict(size=3, alpha=0.5, beta=0.7, k=2.0), [(2, 5, 3)]),
    ("LocalResponseNorm", dict(size=4), [(2, 6, 3, 2)]),
    ("Fold", dict(output_size=(4, 5), kernel_size=2), [(2, 8, 12)]),
    ("ZeroPad2d", dict(padding=(1, 2, 0, 3)), [(2, 3, 4)]),
    ("ConstantPad1d", dict(padding=2, value=1.5), [(2, 3, 4)]),
    ("ConstantPad3d", dict(padding=(1, 0, 2, 1, 0, 1), value=-1.0), [(1, 2, 3, 2, 2)]),
    ("ReflectionPad1d", dict(padding=(3, 1)), [(2, 3, 4)]),
    ("ReflectionPad2d", dict(padding=2), [(1, 2, 3, 4)]),
    ("ReflectionPad3d", dict(padding=1), [(2, 3, 2, 3)]),
    ("ReplicationPad1d", dict(padding=(2, 0)), [(3, 4)]),
    ("ReplicationPad2d", dict(padding=(1, 2, 3, 0)), [(2, 3, 4, 2)]),
    ("ReplicationPad3d", dict(padding=2), [(1, 2, 2, 3, 2)]),
    ("CircularPad1d", dict(padding=(2, 1)), [(2, 3, 4)]),
    ("CircularPad2d", dict(padding=(1, 2, 2, 0)), [(1, 2, 3, 4)]),
    ("CircularPad3d", dict(padding=1), [(1, 2, 2, 3, 2)]),
]


@pytest.mark.parametrize("name,kwargs,shapes", LAYERS, ids=[f"{c[0]}{c[1]}" for c in LAYERS])
def test_parameter_free_layer_matches_torch(name, kwargs, shapes):
    _run(getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs),
         [n(*s) for s in shapes], [True] * len(shapes))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax", "Softmin"])
def test_implicit_softmax_dim_as_torch(name):
    for shape in [(4,), (2, 3), (2, 3, 4), (2, 3, 4, 2)]:
        x = n(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            ours = getattr(nn, name)(dim=None)(fnn.tensor(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = getattr(torch.nn, name)()(torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    assert nn.Softmax(axis=-1).dim == -1 and nn.Softmax(0).axis == 0
    # the API contract's default: the last axis (PyTorch's is the implicit dim)
    assert nn.Softmax().dim == -1 and nn.LogSoftmax().dim == -1 and nn.Softmin().dim is None


CALLS_WITHOUT_DIM = [("Softmax", lambda x: nn.Softmax()(x)),
                     ("LogSoftmax", lambda x: nn.LogSoftmax()(x)),
                     ("softmax", lambda x: F.softmax(x)),
                     ("log_softmax", lambda x: x.log_softmax())]


@pytest.mark.parametrize("name,call", CALLS_WITHOUT_DIM, ids=[c[0] for c in CALLS_WITHOUT_DIM])
def test_the_last_axis_default_warns_where_torchs_implicit_dim_differs(name, call):
    """The contract's default (the last axis) and PyTorch's implicit dim agree for 1- and
    2-D input and differ above: there a ported script would change meaning, so it warns,
    naming both dims; an explicit dim never warns."""
    for shape, torch_dim in [((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 2), 1)]:
        x = fnn.tensor(n(*shape))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = call(x)
        log = "og" in name
        explicit = fnn.log_softmax(x, -1) if log else fnn.softmax(x, -1)
        np.testing.assert_array_equal(out.numpy(), explicit.numpy())
        if len(shape) <= 2:
            assert not seen
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn = torch.nn.functional.log_softmax if log else torch.nn.functional.softmax
                theirs = fn(torch.tensor(x.numpy()))
            np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-6)
        else:
            assert len(seen) == 1 and seen[0].filename == __file__, [str(w) for w in seen]
            assert (f"takes the last axis (dim={len(shape) - 1})" in str(seen[0].message)
                    and f"implicit choice takes dim={torch_dim}" in str(seen[0].message))


@pytest.mark.filterwarnings("ignore:.*deprecated")
def test_deprecated_upsample_functions_as_torch():
    x = n(1, 2, 3, 4)
    _run(lambda t: F.upsample_nearest(t, scale_factor=2),
         lambda t: torch.nn.functional.upsample_nearest(t, scale_factor=2), [x], [True])
    _run(lambda t: F.upsample_bilinear(t, size=(5, 7)),
         lambda t: torch.nn.functional.upsample_bilinear(t, size=(5, 7)), [x], [True])
    assert repr(nn.ZeroPad2d(1)) == repr(torch.nn.ZeroPad2d(1))
    assert repr(nn.ReflectionPad1d(2)) == repr(torch.nn.ReflectionPad1d(2))


# ---------------------------------------------------------------- CTC

CTC = [  # targets, input lengths, target lengths, keyword arguments
    (np.array([[1, 2, 2, 3], [1, 1, 0, 0], [4, 3, 2, 1], [2, 0, 0, 0]]), [12, 10, 7, 5],
     [4, 2, 4, 1], {}),
    (np.array([[1, 2, 2, 3], [1, 1, 0, 0], [4, 3, 2, 1], [2, 0, 0, 0]]), [12, 10, 7, 5],
     [4, 0, 4, 1], {}),  # an empty target
    (np.array([1, 2, 2, 3, 1, 1, 4, 3, 2, 1, 2]), [12, 10, 7, 5], [4, 2, 4, 1], {}),  # 1-D
    (np.array([[1, 1, 1, 1], [1, 1, 0, 0], [4, 3, 2, 1], [2, 0, 0, 0]]), [5, 10, 7, 5],
     [4, 2, 4, 1], dict(zero_infinity=True)),  # 1 1 1 1 needs 7 frames, has 5
    (np.array([[2, 1, 3, 1], [1, 1, 0, 0], [0, 3, 2, 1], [2, 0, 0, 0]]), [12, 10, 7, 5],
     [4, 2, 4, 1], dict(blank=4)),
]


@pytest.mark.parametrize("through_log_softmax", [True, False], ids=["logits", "log_probs"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CTC, ids=["padded", "empty target", "concatenated",
                                           "infeasible", "blank 4"])
def test_ctc_loss_matches_torch(case, reduction, through_log_softmax):
    """Values, and gradients both of the logits (through log_softmax) and of log_probs
    themselves (PyTorch's gradient there assumes normalised inputs; fastnn's is the same)."""
    targets, in_len, tg_len, kwargs = case
    z = n(12, 4, 5)
    if not through_log_softmax:
        z = z - np.log(np.exp(z).sum(-1, keepdims=True))

    def ours(t):
        lp = F.log_softmax(t, -1) if through_log_softmax else t
        return nn.CTCLoss(reduction=reduction, **kwargs)(lp, fnn.tensor(targets), in_len,
                                                         fnn.tensor(tg_len))

    def theirs(t):
        lp = t.log_softmax(-1) if through_log_softmax else t
        return torch.nn.CTCLoss(reduction=reduction, **kwargs)(
            lp, torch.tensor(targets), torch.tensor(in_len), torch.tensor(tg_len))

    _run(ours, theirs, [z], [True])


def test_ctc_loss_unbatched_infinite_and_refusals():
    z = n(6, 4)
    lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    ours = F.ctc_loss(fnn.tensor(lp), fnn.tensor([1, 2]), [6], [2], reduction="none")
    theirs = torch.nn.functional.ctc_loss(torch.tensor(lp), torch.tensor([1, 2]),
                                          torch.tensor([6]), torch.tensor([2]),
                                          reduction="none")
    assert ours.shape == () and np.isclose(ours.item(), theirs.item())
    short = F.ctc_loss(fnn.tensor(lp), fnn.tensor([1, 1, 1]), [4], [3], reduction="none")
    assert short.item() == float("inf")  # as PyTorch: 1 1 1 needs 5 frames
    with pytest.raises(ValueError, match="other than blank 0"):
        F.ctc_loss(fnn.tensor(lp), fnn.tensor([0, 1]), [6], [2])
    with pytest.raises(ValueError, match=r"input_lengths \[7\] must lie in \[0, 6\]"):
        F.ctc_loss(fnn.tensor(lp), fnn.tensor([1]), [7], [1])
