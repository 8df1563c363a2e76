"""EmbeddingBag, Bilinear and F.embedding's options against PyTorch: a PyTorch state_dict
loads, and outputs and gradients (weight, per_sample_weights, inputs) agree."""

import copy

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.nn.torch_compare import TOL, compare, devices

torch = pytest.importorskip("torch")
rng = np.random.default_rng(41)


@pytest.fixture(params=[d if d == "cpu" else pytest.param(d, marks=pytest.mark.slow)
                        for d in devices()])  # other backends: --runslow
def device(request):
    return request.param


INPUT_1D = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
BAG_CASES = {
    "offsets": ({}, INPUT_1D, np.array([0, 3, 3, 7])),  # the second bag is empty
    "last_offset": ({"include_last_offset": True}, INPUT_1D, np.array([0, 2, 2, 6, 10])),
    "2d": ({}, np.array([[1, 2, 4, 1], [5, 4, 3, 9]]), None),
    "padding": ({"padding_idx": 4}, INPUT_1D, np.array([0, 2, 3, 5])),  # bag 1 all padding
}


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", list(BAG_CASES))
def test_embedding_bag_matches_torch(mode, case, device):
    config, values, offsets = BAG_CASES[case]
    torch.manual_seed(0)
    theirs = torch.nn.EmbeddingBag(10, 3, mode=mode, **config)
    ours = nn.EmbeddingBag(10, 3, mode=mode, dtype="float64", device=device, **config)
    if "padding_idx" in config:
        assert not ours.weight.numpy()[config["padding_idx"]].any()
    inputs = [values] + ([] if offsets is None else [offsets])
    compare(ours, theirs, inputs, "float64", device)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_per_sample_weights(dtype, two_d, device):
    torch.manual_seed(1)
    theirs = torch.nn.EmbeddingBag(10, 4, mode="sum", padding_idx=2)
    ours = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=2, dtype=dtype, device=device)
    values = INPUT_1D.reshape(2, 5) if two_d else INPUT_1D
    offsets = None if two_d else np.array([0, 4, 4])
    weights = rng.standard_normal(values.shape)
    if two_d:
        compare(ours, theirs, [values, weights], dtype, device,
                lambda m, x, w: m(x, per_sample_weights=w))
    else:
        compare(ours, theirs, [values, offsets, weights], dtype, device)


def test_embedding_bag_max_norm_matches_torch():
    torch.manual_seed(2)
    theirs = torch.nn.EmbeddingBag(10, 3, max_norm=1.0)
    with torch.no_grad():
        theirs.weight.mul_(2.0)
    ours = nn.EmbeddingBag(10, 3, max_norm=1.0, dtype="float64")
    compare(ours, theirs, [INPUT_1D, np.array([0, 3, 6])], "float64", "cpu")
    np.testing.assert_allclose(ours.weight.detach().numpy(),
                               theirs.weight.detach().double().numpy(), rtol=1e-6)


def test_embedding_bag_scale_grad_by_freq():
    """Each row's gradient over its count in the input, as F.embedding's (torch 2.13's CPU
    EmbeddingBag divides by miscounted frequencies here, so the reference is torch's
    unscaled gradient over np.bincount)."""
    torch.manual_seed(2)
    theirs = torch.nn.EmbeddingBag(10, 3, mode="sum").double()
    ours = nn.EmbeddingBag(10, 3, mode="sum", scale_grad_by_freq=True, dtype="float64")
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    offsets = np.array([0, 3, 6])
    g = rng.standard_normal((3, 3))
    theirs(torch.tensor(INPUT_1D), torch.tensor(offsets)).backward(torch.tensor(g))
    ours(fnn.tensor(INPUT_1D), fnn.tensor(offsets)).backward(fnn.tensor(g))
    counts = np.maximum(np.bincount(INPUT_1D, minlength=10), 1)[:, None]
    np.testing.assert_allclose(ours.weight.grad.numpy(),
                               theirs.weight.grad.numpy() / counts, rtol=1e-12)


def test_embedding_bag_errors():
    bag = nn.EmbeddingBag(5, 2, mode="sum")
    with pytest.raises(ValueError, match="needs offsets"):
        bag(fnn.tensor([0, 1]))
    with pytest.raises(ValueError, match="offsets must be None"):
        bag(fnn.tensor([[0, 1]]), fnn.tensor([0]))
    with pytest.raises(ValueError, match="offsets\\[0\\] must be 0"):
        bag(fnn.tensor([0, 1]), fnn.tensor([1]))
    with pytest.raises(ValueError, match="only supported for mode='sum'"):
        nn.EmbeddingBag(5, 2)(fnn.tensor([0, 1]), fnn.tensor([0]), fnn.tensor([1.0, 2.0]))
    with pytest.raises(IndexError, match="indices must be in"):
        bag(fnn.tensor([0, 7]), fnn.tensor([0]))
    with pytest.raises(ValueError, match="mode"):
        nn.EmbeddingBag(5, 2, mode="min")
    grad_x, grads = bag.reverse(fnn.tensor([0, 1, 1]), fnn.ones(2, 2), fnn.tensor([0, 1]))
    assert grad_x is None
    np.testing.assert_allclose(grads["weight"].numpy()[:2], [[1, 1], [2, 2]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(dtype, bias, device):
    torch.manual_seed(3)
    theirs = torch.nn.Bilinear(3, 4, 5, bias=bias)
    ours = nn.Bilinear(3, 4, 5, bias=bias, dtype=dtype, device=device)
    bound = 1 / np.sqrt(3)
    assert all(np.abs(v).max() <= bound for v in ours.state_dict().values())
    compare(ours, theirs, [rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 4))],
            dtype, device)


def test_bilinear_reverse_and_errors():
    layer = nn.Bilinear(3, 2, 4, dtype=fnn.float64)
    twin = copy.deepcopy(layer)
    x1, x2, g = (rng.standard_normal(s) for s in ((5, 3), (5, 2), (5, 4)))
    xt = fnn.tensor(x1, requires_grad=True)
    layer(xt, fnn.tensor(x2)).backward(fnn.tensor(g))
    grad_x, grads = twin.reverse(fnn.tensor(x1), fnn.tensor(g), fnn.tensor(x2))
    np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-12)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="bilinear"):
        layer(fnn.randn(5, 3, dtype=fnn.float64), fnn.randn(4, 2, dtype=fnn.float64))


EMBEDDING_OPTIONS = [
    {"max_norm": 1.0},
    {"max_norm": 1.5, "norm_type": 1.0},
    {"scale_grad_by_freq": True},
    {"max_norm": 2.0, "scale_grad_by_freq": True, "padding_idx": 4},
]


@pytest.mark.parametrize("options", EMBEDDING_OPTIONS, ids=str)
def test_functional_embedding_options_match_torch(options, device):
    w0 = rng.standard_normal((6, 3)) * 2
    idx = np.array([[0, 1, 1], [4, 1, 5]])
    tw = torch.tensor(w0, requires_grad=True)
    fw = fnn.tensor(w0, requires_grad=True, device=device)
    t_out = torch.nn.functional.embedding(torch.tensor(idx), tw, **options)
    f_out = F.embedding(fnn.tensor(idx, device=device), fw, **options)
    g = rng.standard_normal(t_out.shape)
    t_out.backward(torch.tensor(g))
    f_out.backward(fnn.tensor(g, device=device))
    tol = TOL["float64"]
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), **tol)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), **tol)
    np.testing.assert_allclose(fw.detach().numpy(), tw.detach().numpy(), **tol)  # renormed


def test_embedding_module_options_and_from_pretrained():
    torch.manual_seed(4)
    theirs = torch.nn.Embedding(6, 3, max_norm=1.0, scale_grad_by_freq=True)
    ours = nn.Embedding(6, 3, max_norm=1.0, scale_grad_by_freq=True, dtype="float64")
    compare(ours, theirs, [np.array([[0, 1, 1, 5]])], "float64", "cpu")
    table = rng.standard_normal((4, 2))
    frozen = nn.Embedding.from_pretrained(fnn.tensor(table))
    t_frozen = torch.nn.Embedding.from_pretrained(torch.tensor(table))
    assert not frozen.weight.requires_grad and not t_frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(fnn.tensor([3, 0])).numpy(),
                                  t_frozen(torch.tensor([3, 0])).numpy())
    assert nn.Embedding.from_pretrained(fnn.tensor(table), freeze=False).weight.requires_grad
    with pytest.raises(ValueError, match="sparse"):
        nn.Embedding(4, 2, sparse=True)


def test_embedding_bag_from_pretrained_as_pytorchs():
    """EmbeddingBag.from_pretrained: PyTorch's arguments in PyTorch's order, frozen unless
    freeze=False, the table copied, the bags PyTorch's."""
    table = rng.standard_normal((5, 3))
    idx, offsets = np.array([4, 0, 2, 2, 1]), np.array([0, 2])
    for kwargs in ({}, dict(mode="max"), dict(freeze=False, mode="sum", padding_idx=2)):
        ours = nn.EmbeddingBag.from_pretrained(fnn.tensor(table), **kwargs)
        theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), **kwargs)
        assert ours.weight.requires_grad == theirs.weight.requires_grad
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(
            ours(fnn.tensor(idx), fnn.tensor(offsets)).detach().numpy(),
            theirs(torch.tensor(idx), torch.tensor(offsets)).detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="EmbeddingBag.from_pretrained: embeddings must be 2-d"):
        nn.EmbeddingBag.from_pretrained(fnn.tensor(table[0]))
