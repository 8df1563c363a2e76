"""Issue 21's functional vision, normalisation and distance ops against PyTorch: values and
the gradients of every floating input, in float64 (and float32 for interpolate, whose
indices PyTorch computes in the input's precision)."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rng = np.random.default_rng(0)


def n(*shape):
    return rng.standard_normal(shape)


def check(name, arrays, dtype="float64", grads=None, **kwargs):
    """F.name(*arrays, **kwargs) against torch's, values and gradients."""
    grads = grads or [True] * len(arrays)
    ours_in = [fnn.tensor(np.asarray(a, dtype) if g else a, requires_grad=g)
               for a, g in zip(arrays, grads)]
    theirs_in = [torch.tensor(np.asarray(a, dtype) if g else a, requires_grad=g)
                 for a, g in zip(arrays, grads)]
    ours = getattr(F, name)(*ours_in, **kwargs)
    theirs = getattr(TF, name)(*theirs_in, **kwargs)
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **tol)
    weight = rng.standard_normal(theirs.shape).astype(dtype)
    (ours * fnn.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


CONV = [
    ("conv_transpose2d", (n(2, 4, 5, 6), n(4, 3, 3, 2)), dict(stride=2, padding=1,
                                                              output_padding=1)),
    ("conv_transpose2d", (n(2, 4, 5, 6), n(4, 3, 3, 2)), dict(stride=(2, 3), padding=(2, 0),
                                                              groups=2, dilation=(1, 2))),
    ("conv_transpose2d", (n(4, 5, 6), n(4, 3, 3, 2), n(3)), dict(padding=(0, 1))),
    ("conv_transpose2d", (n(2, 4, 5, 6), n(4, 3, 3, 2)), dict(dilation=2, output_padding=1,
                                                              padding=(4, 1))),
    ("conv_transpose2d", (n(2, 4, 5, 6), n(4, 3, 3, 2)), dict(stride=3, padding=(3, 2))),
    ("conv_transpose1d", (n(2, 4, 7), n(4, 2, 3)), dict(stride=3, padding=1, output_padding=2,
                                                       groups=2, dilation=2)),
    ("conv_transpose1d", (n(2, 3, 4), n(3, 2, 5), n(2)), dict(groups=1)),
    # nn.Conv1d's attributes are 1-tuples, passed on to F.conv1d by user modules
    ("conv1d", (n(2, 4, 9), n(6, 4, 3), n(6)), dict(stride=(2,), padding=(1,),
                                                   dilation=(2,))),
    ("unfold", (n(2, 4, 5, 6),), dict(kernel_size=(2, 3), padding=1, stride=(2, 1),
                                      dilation=(1, 2))),
    ("unfold", (n(3, 4, 4),), dict(kernel_size=2)),
    ("fold", (n(2, 24, 12),), dict(output_size=(5, 7), kernel_size=(2, 3), stride=2,
                                   padding=1)),
    ("fold", (n(12, 9),), dict(output_size=4, kernel_size=2, dilation=1)),
]


@pytest.mark.parametrize("name,arrays,kwargs", CONV, ids=[c[0] + str(c[2]) for c in CONV])
def test_convolution_ops(name, arrays, kwargs):
    check(name, arrays, **kwargs)


NORMS = [
    ("layer_norm", lambda f, x, w, b: f.layer_norm(x, (5, 6), w, b), (n(2, 3, 5, 6), n(5, 6),
                                                                        n(5, 6))),
    ("layer_norm eps, no affine", lambda f, x: f.layer_norm(x, [6], eps=0.1), (n(4, 6),)),
    ("rms_norm", lambda f, x, w: f.rms_norm(x, (6,), w), (n(2, 5, 6), n(6))),
    ("rms_norm 2 axes eps", lambda f, x: f.rms_norm(x, [5, 6], eps=1e-3), (n(2, 5, 6),)),
    ("group_norm", lambda f, x, w, b: f.group_norm(x, 2, w, b), (n(2, 4, 5, 3), n(4), n(4))),
    ("group_norm 1-D", lambda f, x: f.group_norm(x, 3, eps=1e-3), (n(2, 6),)),
    ("instance_norm", lambda f, x, w, b: f.instance_norm(x, weight=w, bias=b),
     (n(2, 4, 5, 3), n(4), n(4))),
    ("normalize", lambda f, x: f.normalize(x), (n(3, 4, 5),)),
    ("normalize p=1 dim=-1", lambda f, x: f.normalize(x, p=1, dim=-1), (n(3, 4),)),
    ("normalize zero row", lambda f, x: f.normalize(x), (np.zeros((3, 4)),)),
    ("pairwise_distance", lambda f, a, b: f.pairwise_distance(a, b), (n(3, 4), n(3, 4))),
    ("pairwise_distance p=3 broadcast", lambda f, a, b: f.pairwise_distance(
        a, b, p=3, keepdim=True), (n(3, 4), n(4))),
    ("cosine_similarity broadcast", lambda f, a, b: f.cosine_similarity(a, b), (n(3, 4),
                                                                                n(1, 4))),
    ("pixel_shuffle", lambda f, x: f.pixel_shuffle(x, 2), (n(2, 3, 8, 2, 3),)),
    ("pixel_unshuffle", lambda f, x: f.pixel_unshuffle(x, 2), (n(2, 3, 4, 6),)),
    ("pad circular", lambda f, x: f.pad(x, (1, 2, 2, 0), mode="circular"), (n(2, 3, 4, 5),)),
    ("pad reflect", lambda f, x: f.pad(x, (1, 2), mode="reflect"), (n(2, 3, 5),)),
]


@pytest.mark.parametrize("label,fn,arrays", NORMS, ids=[c[0] for c in NORMS])
def test_normalisation_and_distance_ops(label, fn, arrays):
    ours_in = [fnn.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = fn(F, *ours_in), fn(TF, *theirs_in)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)
    weight = rng.standard_normal(theirs.shape)
    (ours * fnn.tensor(weight)).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_instance_norm_running_stats_update_as_torch():
    x = n(3, 2, 5)
    ours = [fnn.tensor(np.zeros(2)), fnn.tensor(np.ones(2))]
    theirs = [torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)]
    F.instance_norm(fnn.tensor(x), *ours, momentum=0.3)
    TF.instance_norm(torch.tensor(x), *theirs, momentum=0.3)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


RESIZE = [dict(scale_factor=2), dict(size=(7, 4)), dict(scale_factor=1.7),
          dict(scale_factor=(0.5, 2.3)), dict(size=(10, 14)), dict(scale_factor=2.1),
          dict(scale_factor=1.2), dict(scale_factor=1.7, recompute_scale_factor=True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bilinear-corners",
                                  "bicubic", "bicubic-corners"])
@pytest.mark.parametrize("kwargs", RESIZE, ids=str)
def test_interpolate_2d(kwargs, mode, dtype):
    corners = mode.endswith("-corners")
    extra = dict(align_corners=True) if corners else {}
    if dtype == "float32" and mode.startswith("bicubic"):
        dtype = "float64"  # a separable sum: float32 rounding differs from PyTorch's 2-D one
    check("interpolate", [n(2, 3, 5, 7)], dtype, mode=mode.replace("-corners", ""),
          **extra, **kwargs)


AA_RESIZE = [dict(size=(3, 4)), dict(scale_factor=0.5), dict(scale_factor=0.37),
             dict(size=(11, 13)), dict(scale_factor=(0.6, 2.3)),
             dict(scale_factor=0.45, recompute_scale_factor=True)]


@pytest.mark.parametrize("corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kwargs", AA_RESIZE, ids=str)
def test_interpolate_antialias(kwargs, mode, corners):
    """PyTorch's (PIL's) antialiased resize: a downscale widens the filter."""
    check("interpolate", [n(2, 3, 9, 10)], mode=mode, antialias=True, align_corners=corners,
          **kwargs)


@pytest.mark.parametrize("mode,shape,kwargs", [
    ("linear", (2, 3, 5), dict(scale_factor=2.5)),
    ("linear", (2, 3, 5), dict(size=1)),
    ("linear", (2, 3, 5), dict(size=1, align_corners=True)),
    ("linear", (2, 3, 5), dict(size=9, align_corners=False)),
    ("trilinear", (1, 2, 5, 3, 4), dict(scale_factor=(1.5, 2, 0.7))),
    ("nearest", (1, 2, 5, 3, 4), dict(scale_factor=(1.5, 2, 0.7))),
    ("nearest", (2, 3, 5), dict(size=12)),
    ("area", (2, 3, 6, 8), dict(size=(3, 4))),
    ("area", (2, 3, 6, 8), dict(size=(7, 9))),
    ("area", (2, 3, 7), dict(scale_factor=0.5)),
    ("area", (1, 2, 4, 5, 6), dict(size=(3, 7, 4))),
])
def test_interpolate_other_ranks(mode, shape, kwargs):
    check("interpolate", [n(*shape)], mode=mode, **kwargs)


@pytest.mark.parametrize("mode, shape, kwargs", [
    ("nearest", (2, 3, 7), dict(scale_factor=1.1)),  # the size kept, the indices moved
    ("nearest", (2, 3, 3), dict(scale_factor=2.2)),  # the size doubled, not i // 2
    ("nearest", (1, 2, 3, 7, 4), dict(scale_factor=(2.2, 1.1, 1.2))),
    ("nearest-exact", (2, 3, 7), dict(scale_factor=1.1)),
    ("nearest-exact", (2, 3, 7, 7), dict(scale_factor=1.1)),
    ("nearest", (2, 3, 3, 7), dict(scale_factor=(2.2, 1.1))),  # 2-D: copy and i // 2
    ("linear", (2, 3, 7), dict(scale_factor=1.1)),  # a kept size is copied
    ("bilinear", (2, 3, 7, 5), dict(scale_factor=(1.1, 1.5))),
    ("trilinear", (1, 2, 7, 3, 4), dict(scale_factor=(1.1, 2.0, 1.1))),
])
def test_interpolate_scale_factor_keeping_or_doubling_a_size(mode, shape, kwargs):
    """Where scale_factor keeps an axis's size or doubles it, PyTorch's kernels differ:
    nearest uses the scale in 1-D and 3-D (and nearest-exact everywhere), copies or halves
    the index in 2-D, and the linear modes copy a kept axis. Gradients: PyTorch's 1-D
    nearest backward copies where its forward did not, so only values are compared."""
    x = n(*shape)
    ours = F.interpolate(fnn.tensor(x), mode=mode, **kwargs)
    theirs = TF.interpolate(torch.tensor(x), mode=mode, **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_interpolate_to_the_same_size_is_a_new_tensor():
    x = fnn.tensor(n(1, 2, 4, 4))
    y = F.interpolate(x, size=(4, 4))
    assert y is not x
    y.zero_()
    assert x.abs().sum().item() > 0


def test_interpolate_refusals_name_the_problem():
    x = fnn.zeros(1, 1, 3, 3)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="mode 'linear' needs a 3-D"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="mode must be one of"):
        F.interpolate(x, scale_factor=2, mode="cubic")
    with pytest.raises(ValueError, match="antialias=True works with modes bilinear and"):
        F.interpolate(x, scale_factor=0.5, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="mode 'bicubic' needs a 4-D"):
        F.interpolate(fnn.zeros(1, 1, 3), scale_factor=2, mode="bicubic")
