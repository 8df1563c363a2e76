"""Issue 21's vision and normalisation layers against PyTorch: a PyTorch state_dict loads
(same keys, shapes), and outputs, input gradients and parameter gradients agree; the
dropout layers (whose masks come from fastnn's generator, not PyTorch's) by their
structure and statistics."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.nn.torch_compare import compare, devices

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)

# (fastnn/torch class name, constructor args, kwargs, input shape, call kwargs)
LAYERS = [
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 5, 4)),
    ("ConvTranspose2d", (4, 6, (2, 3)), dict(stride=(1, 2), groups=2, dilation=(2, 1),
                                             bias=False), (2, 4, 3, 5)),
    ("ConvTranspose2d", (3, 2, 2), dict(), (3, 4, 4)),
    ("ConvTranspose2d", (2, 4, 3), dict(dilation=2, output_padding=1, padding=4),
     (2, 2, 5, 6)),  # the composite path: output_padding >= stride
    ("ConvTranspose1d", (4, 2, 3), dict(stride=3, padding=2, output_padding=1, groups=2),
     (2, 4, 6)),
    ("ConvTranspose1d", (3, 5, 4), dict(dilation=2), (3, 7)),
    ("Conv3d", (4, 6, (3, 2, 2)), dict(stride=(1, 2, 1), padding=1, dilation=(2, 1, 1),
                                       groups=2), (2, 4, 5, 4, 3)),
    ("Conv3d", (3, 2, 2), dict(padding="same", bias=False), (3, 4, 3, 5)),
    ("LayerNorm", ([5, 6],), dict(), (2, 3, 5, 6)),
    ("LayerNorm", (6,), dict(bias=False), (4, 6)),
    ("LayerNorm", ((5, 6),), dict(elementwise_affine=False), (2, 5, 6)),
    ("RMSNorm", ([5, 6],), dict(), (2, 5, 6)),
    ("RMSNorm", (6,), dict(eps=1e-3), (4, 6)),
    ("RMSNorm", (6,), dict(elementwise_affine=False), (4, 6)),
    ("GroupNorm", (2, 4), dict(), (3, 4, 5)),
    ("GroupNorm", (3, 6), dict(affine=False, eps=1e-3), (2, 6, 3, 2)),
    ("InstanceNorm1d", (3,), dict(), (2, 3, 5)),
    ("InstanceNorm1d", (3,), dict(affine=True), (3, 5)),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 4, 5)),
    ("InstanceNorm3d", (2,), dict(affine=True), (2, 2, 3, 2, 3)),
    ("BatchNorm3d", (3,), dict(), (2, 3, 2, 3, 2)),
]


def _id(case):
    name, args, kwargs, shape = case
    return f"{name}{args}{kwargs or ''}{list(shape)}"


@pytest.mark.parametrize("case", LAYERS, ids=[_id(c) for c in LAYERS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_matches_torch(case, dtype):
    name, args, kwargs, shape = case
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, dtype=dtype, **kwargs)
    for p in theirs.parameters():  # away from the 1/0 initial values of the norms
        torch.nn.init.uniform_(p, -1.5, 1.5)
    assert {k: tuple(v.shape) for k, v in theirs.state_dict().items()} == \
        {k: v.shape for k, v in ours.state_dict().items()}
    compare(ours, theirs, [rng.standard_normal(shape)], dtype, "cpu")
    for key, value in theirs.state_dict().items():  # buffers updated as PyTorch's
        np.testing.assert_allclose(np.asarray(ours.state_dict()[key]), value.numpy(), rtol=2e-4,
                                   atol=1e-6, err_msg=key)


@pytest.mark.parametrize("device", devices())
def test_conv_transpose_on_each_device(device):
    torch.manual_seed(1)
    theirs = torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
    ours = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1, device=device)
    compare(ours, theirs, [rng.standard_normal((2, 3, 4, 3))], "float32", device)


@pytest.mark.parametrize("name", ["ConvTranspose1d", "ConvTranspose2d"])
def test_conv_transpose_output_size(name):
    rank = 1 if name.endswith("1d") else 2
    theirs = getattr(torch.nn, name)(2, 3, 3, stride=3, padding=1).double()
    ours = getattr(nn, name)(2, 3, 3, stride=3, padding=1, dtype=fnn.float64)
    x = rng.standard_normal((1, 2) + (4,) * rank)
    size = [1, 3] + [11] * rank
    out = compare(ours, theirs, [x], "float64", "cpu", call=lambda m, t: m(t, output_size=size))
    assert out.shape == tuple(size)
    with pytest.raises(ValueError, match="valid sizes range from 10 to 12"):
        ours(fnn.tensor(x), output_size=[13] * rank)


def test_init_bounds_and_eval_running_stats():
    layer = nn.ConvTranspose2d(8, 4, 3, groups=2)
    bound = 1 / np.sqrt(2 * 9)  # PyTorch's fan_in: out_channels // groups * kernel taps
    w = layer.weight.numpy()
    assert w.shape == (8, 2, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > bound / 2
    theirs = torch.nn.InstanceNorm2d(3, track_running_stats=True).double()
    ours = nn.InstanceNorm2d(3, track_running_stats=True, dtype=fnn.float64)
    for _ in range(2):  # train twice, then compare eval mode (running statistics)
        x = rng.standard_normal((2, 3, 4, 4))
        theirs(torch.tensor(x))
        ours(fnn.tensor(x))
    theirs.eval()
    ours.eval()
    compare(ours, theirs, [rng.standard_normal((2, 3, 4, 4))], "float64", "cpu")


def test_layer_norm_list_shape_reverse_matches_tape():
    layer = nn.LayerNorm([3, 4], dtype=fnn.float64)
    x = fnn.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    g = fnn.tensor(rng.standard_normal((2, 3, 4)))
    grad_x, grads = layer.reverse(x, g)
    (layer(x) * g).sum().backward()
    np.testing.assert_allclose(grad_x.numpy(), x.grad.numpy(), rtol=1e-10)
    assert set(grads) == {"weight", "bias"}
    np.testing.assert_allclose(grads["weight"].numpy(), layer.weight.grad.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- dropout


@pytest.mark.filterwarnings("ignore:dropout2d")  # a 3-D input, as PyTorch warns too
@pytest.mark.parametrize("name,shape,mask_shape", [
    ("Dropout1d", (4, 6, 5), (4, 6, 1)), ("Dropout1d", (6, 5), (6, 1)),
    ("Dropout2d", (4, 6, 3, 5), (4, 6, 1, 1)), ("Dropout2d", (4, 6, 5), (4, 6, 1)),
    ("Dropout3d", (2, 6, 2, 3, 2), (2, 6, 1, 1, 1)), ("Dropout3d", (6, 2, 3, 2), (6, 1, 1, 1)),
])
def test_channel_dropout_drops_whole_channels(name, shape, mask_shape):
    layer = getattr(nn, name)(p=0.4)
    x = np.abs(rng.standard_normal(shape)) + 0.5
    out = layer(fnn.tensor(x, dtype=fnn.float64)).numpy()
    ratio = out / x  # 0 or 1 / (1 - p), constant over each channel
    assert np.all(np.isclose(ratio, 0.0) | np.isclose(ratio, 1 / 0.6))
    channel = ratio.reshape(mask_shape[:len(mask_shape) - mask_shape.count(1)] + (-1,))
    assert np.allclose(channel, channel[..., :1])
    torch_out = getattr(torch.nn, name)(p=0.4)(torch.tensor(x))
    assert torch_out.shape == out.shape
    layer.eval()
    assert layer(fnn.tensor(x)).numpy() is not None
    np.testing.assert_array_equal(layer(fnn.tensor(x)).numpy(), x)


def test_channel_dropout_rejects_wrong_rank_as_torch():
    with pytest.raises(ValueError, match="dropout1d: expected a 2-D"):
        nn.Dropout1d()(fnn.zeros(2, 3, 4, 5))
    with pytest.raises(RuntimeError):
        torch.nn.Dropout1d()(torch.zeros(2, 3, 4, 5))


def test_dropout_functional_matches_torch_semantics():
    x = fnn.tensor(np.ones((200, 50)))
    fnn.manual_seed(3)
    a = F.dropout(x, 0.3)
    fnn.manual_seed(3)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # fastnn's generator seeds the mask
    kept = a.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(a.numpy()[kept], 1 / 0.7)
    assert F.dropout(x, 0.3, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), 0.0)
    y = fnn.tensor(np.ones((4, 5)))
    assert F.dropout(y, 0.5, inplace=True) is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_formula_and_selu_statistics(name):
    p = 0.2
    fnn.manual_seed(0)
    torch.manual_seed(0)  # seeded: a fixed draw, whatever ran before in this worker
    layer = getattr(nn, name)(p)
    x = np.random.default_rng(3).standard_normal((256, 64, 10))  # 16k channels: settles
    out = layer(fnn.tensor(x)).numpy()
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    kept = np.isclose(out, a * x + alpha * a * p)
    dropped = np.isclose(out, -alpha * a + alpha * a * p)
    assert np.all(kept | dropped) and abs(dropped.mean() - p) < 0.02
    if name == "FeatureAlphaDropout":
        assert np.all(kept == kept[..., :1])
    # on SELU's fixed point (mean 0, variance 1) the output keeps both, as PyTorch's
    theirs = getattr(torch.nn, name)(p)(torch.tensor(x)).numpy()
    for stat in (np.mean, np.var):
        assert abs(stat(out) - stat(theirs)) < 0.03


@pytest.mark.parametrize("name", ["Dropout2d", "AlphaDropout"])
def test_dropout_reverse_uses_the_forward_mask(name):
    layer = getattr(nn, name)(0.5)
    x = fnn.tensor(rng.standard_normal((3, 4, 2, 2)), requires_grad=True)
    g = fnn.tensor(rng.standard_normal((3, 4, 2, 2)))
    (layer(x) * g).sum().backward()
    grad_x, grads = layer.reverse(x, g)
    np.testing.assert_allclose(grad_x.numpy(), x.grad.numpy())
    assert grads == {}


def test_dropout_p_one_gives_zeros_as_torch():
    x = fnn.tensor(np.ones((3, 4)), requires_grad=True)
    for layer in (nn.Dropout(1.0), nn.Dropout2d(1.0), nn.AlphaDropout(1.0)):
        out = layer(x if not isinstance(layer, nn.Dropout2d) else x.reshape(1, 3, 4, 1))
        np.testing.assert_array_equal(out.numpy(), 0.0)
    out = nn.Dropout(1.0)(x)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    np.testing.assert_array_equal(torch.nn.Dropout(1.0)(torch.ones(3, 4)).numpy(), 0.0)


def test_reverse_apply_training_matches_the_tape():
    """A small decoder of the new layers trains the same through reverse/apply as through
    the tape (Sequential's reverse chains each layer's)."""
    from fastnn import optim

    def model():
        fnn.manual_seed(5)
        return nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
                             nn.GroupNorm(2, 4), nn.Upsample(scale_factor=1.5,
                                                             mode="bilinear"),
                             nn.InstanceNorm2d(4, affine=True), nn.PixelUnshuffle(2),
                             nn.Conv2d(16, 2, 1))

    x = fnn.tensor(rng.standard_normal((2, 3, 4, 4)).astype(np.float32))
    target = fnn.tensor(rng.standard_normal((2, 2, 6, 6)).astype(np.float32))
    tape, rev = model(), model()
    tape_opt, rev_opt = optim.SGD(tape.parameters(), lr=0.05), optim.SGD(rev.parameters(),
                                                                         lr=0.05)
    for _ in range(3):
        tape_opt.zero_grad()
        F.mse_loss(tape(x), target).backward()
        tape_opt.step()
        out = rev(x)
        with fnn.no_grad():
            grad_out = (out - target) * (2.0 / out.numel())
        _, grads = rev.reverse(x, grad_out)
        rev.apply(rev_opt, grads)
    for (name, a), (_, b) in zip(tape.named_parameters(), rev.named_parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("call,error,match", [
    (lambda: nn.GroupNorm(3, 4), ValueError, "num_channels=4 must be divisible by num_groups=3"),
    (lambda: nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2), ValueError,
     "output_padding .* must be smaller than either stride"),
    (lambda: nn.ConvTranspose2d(2, 4, 3, groups=3), ValueError, "divisible by groups=3"),
    (lambda: nn.LayerNorm([3, 0]), ValueError, "normalized_shape must be an integer >= 1"),
    (lambda: nn.LayerNorm(4)(fnn.zeros(2, 3)), ValueError, r"LayerNorm\(4\)"),
    (lambda: F.layer_norm(fnn.zeros(2, 3), [2, 3, 4]), ValueError,
     r"normalized_shape \[2, 3, 4\] must match the last dimensions"),
    (lambda: nn.InstanceNorm2d(3)(fnn.zeros(2, 3)), ValueError, "expected a 3-D .* or 4-D"),
    (lambda: F.instance_norm(fnn.zeros(2, 3, 1)), ValueError, "more than 1 spatial element"),
    (lambda: F.pixel_shuffle(fnn.zeros(1, 6, 2, 2), 2), ValueError,
     "6 channels .* divisible by upscale_factor"),
    (lambda: F.fold(fnn.zeros(1, 5, 9), (4, 4), 2), ValueError,
     r"fold: expected input \(N, C \* 4, 9\)"),
    (lambda: F.unfold(fnn.zeros(1, 1, 2, 2), 3), ValueError, "does not fit"),
    (lambda: F.conv3d(fnn.zeros(1, 2, 3, 3, 3), fnn.zeros(1, 3, 1, 1, 1)), ValueError,
     "weight expects 3 input channels"),
    (lambda: nn.Conv3d(2, 2, 2, padding="same", stride=2), ValueError, "needs stride 1"),
    (lambda: nn.Dropout2d(0.5)(fnn.zeros(3)), RuntimeError,
     "dropout2d: Feature dropout requires at least 2 dimensions"),
    (lambda: F.dropout(fnn.zeros(2), -0.1), ValueError, "between 0 and 1"),
    (lambda: nn.Upsample(), ValueError, "exactly one of size and scale_factor"),
    (lambda: nn.ReflectionPad2d((1, 2, 3)), ValueError, "padding must be an int or 4 ints"),
    (lambda: nn.ReflectionPad1d(3)(fnn.zeros(1, 2, 3)), ValueError,
     "reflect padding .* smaller than"),
    (lambda: F.group_norm(fnn.zeros(2, 4, 3), 3), ValueError, "do not divide into"),
    (lambda: nn.CosineSimilarity().reverse(fnn.zeros(2, 3), fnn.zeros(2)), TypeError,
     "a layer of two inputs has no reverse"),
])
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
