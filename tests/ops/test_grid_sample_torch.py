"""grid_sample and affine_grid against PyTorch: values and the gradients of input, grid and
theta over every mode x padding mode x align_corners, float32 and float64, on each device;
grids mix random points (some outside [-1, 1]) with points on exact integer and half-integer
pixel coordinates, where nearest's ties and the one-sided grid gradients show; the
align_corners=None warnings and the error messages are PyTorch's words."""

import itertools
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-4, atol=3e-5)}


def _lattice_grid(rng, out_shape, rank):
    """Half the points random in [-1.6, 1.6], half on multiples of 1/8 in [-1.25, 1.25]:
    with the sizes of _spatial these are exact integer or half-integer pixel coordinates."""
    grid = rng.uniform(-1.6, 1.6, size=out_shape + (rank,))
    lattice = rng.integers(-10, 11, size=out_shape + (rank,)) / 8
    pick = rng.random(out_shape) < 0.5
    grid[pick] = lattice[pick]
    return grid


def _spatial(align, rank):
    # (g + 1) (n - 1) / 2 and (g + 1) n / 2 - 0.5 are then dyadic: exact in float32
    return ((5, 9, 3) if align else (4, 8, 2))[:rank]


def _compare(x, grid, dtype, device, **kw):
    rng = np.random.default_rng(99)
    tx = torch.tensor(x.astype(dtype), requires_grad=True)
    tg = torch.tensor(grid.astype(dtype), requires_grad=True)
    theirs = TF.grid_sample(tx, tg, **kw)
    fx = fnn.tensor(x.astype(dtype), device=device, requires_grad=True)
    fg = fnn.tensor(grid.astype(dtype), device=device, requires_grad=True)
    ours = F.grid_sample(fx, fg, **kw)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == getattr(fnn, dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOL[dtype])
    weight = rng.normal(size=theirs.shape).astype(dtype)
    (theirs * torch.tensor(weight)).sum().backward()
    (ours * fnn.tensor(weight, device=device)).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **TOL[dtype],
                               err_msg="input gradient")
    np.testing.assert_allclose(fg.grad.numpy(), tg.grad.numpy(), **TOL[dtype],
                               err_msg="grid gradient")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS,
                                                                      (False, True))))
def test_grid_sample_2d(device, dtype, mode, padding, align):
    rng = np.random.default_rng([MODES.index(mode), PADDINGS.index(padding), align])
    x = rng.normal(size=(2, 3) + _spatial(align, 2))
    grid = _lattice_grid(rng, (2, 5, 6), 2)
    _compare(x, grid, dtype, device, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(
    ("bilinear", "nearest"), PADDINGS, (False, True))))
def test_grid_sample_3d(device, mode, padding, align):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 2) + _spatial(align, 3))
    grid = _lattice_grid(rng, (2, 3, 2, 4), 3)
    _compare(x, grid, "float64", device, mode=mode, padding_mode=padding,
             align_corners=align)


@pytest.mark.parametrize("mode", MODES)
def test_unit_sized_axes(mode):
    """One-pixel axes: align_corners maps every point onto the pixel (reflection with no
    span), without it the pixel's edges are at -1 and 1."""
    rng = np.random.default_rng(8)
    for padding, align in itertools.product(PADDINGS, (False, True)):
        _compare(rng.normal(size=(1, 2, 1, 3)), rng.uniform(-2, 2, size=(1, 2, 3, 2)),
                 "float64", "cpu", mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 2, 3, 4),
                                  (1, 2, 1, 1, 2)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid(device, size, align):
    rng = np.random.default_rng(9)
    rank = len(size) - 2
    theta = rng.normal(size=(size[0], rank, rank + 1))
    t = torch.tensor(theta, requires_grad=True)
    f = fnn.tensor(theta, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn, in both
        theirs = TF.affine_grid(t, size, align_corners=align)
        ours = F.affine_grid(f, size, align_corners=align)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOL["float64"])
    weight = rng.normal(size=theirs.shape)
    (theirs * torch.tensor(weight)).sum().backward()
    (ours * fnn.tensor(weight, device=device)).sum().backward()
    np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), **TOL["float64"])


def test_spatial_transformer_gradients(device):
    """affine_grid + grid_sample, rotated and scaled: values and theta / input gradients."""
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 3, 6, 5))
    angle = np.array([0.3, -1.1])
    theta = np.stack([[[1.2 * np.cos(a), -np.sin(a), 0.1], [np.sin(a), 0.8 * np.cos(a), -0.2]]
                      for a in angle])
    results = []
    for lib, make, fn in ((torch, torch.tensor, TF), (fnn, fnn.tensor, F)):
        kw = {} if lib is torch else dict(device=device)
        xs, ts = make(x, requires_grad=True, **kw), make(theta, requires_grad=True, **kw)
        grid = fn.affine_grid(ts, (2, 3, 4, 7), align_corners=False)
        out = fn.grid_sample(xs, grid, padding_mode="reflection", align_corners=False)
        (out * out).sum().backward()
        results.append([np.asarray(a.detach().numpy() if lib is torch else a.numpy())
                        for a in (out, xs.grad, ts.grad)])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, **TOL["float64"])


def _warning_texts(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kw)
    return [(w.category, str(w.message)) for w in caught]


def test_warnings_are_torchs():
    x, grid = np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 1, 2))
    assert (_warning_texts(F.grid_sample, fnn.tensor(x), fnn.tensor(grid))
            == _warning_texts(TF.grid_sample, torch.tensor(x), torch.tensor(grid)))
    theta = np.eye(2, 3)[None]
    for size, align in (((1, 1, 2, 3), None), ((1, 1, 1, 3), True)):
        ours = _warning_texts(F.affine_grid, fnn.tensor(theta), size, align_corners=align)
        theirs = _warning_texts(TF.affine_grid, torch.tensor(theta), size,
                                align_corners=align)
        assert ours == theirs and len(ours) == 1


BAD = [  # (input shape, grid shape, keywords): PyTorch's message, word for word
    ((1, 1, 3), (1, 2, 2, 2), {}),
    ((1, 1, 3, 3), (1, 2, 2, 3), {}),
    ((1, 1, 3, 3), (2, 2, 2, 2), {}),
    ((1, 1, 3, 3), (1, 2, 2, 2, 2), {}),
    ((1, 1, 0, 3), (1, 2, 2, 2), {}),
    ((1, 1, 3, 3, 3), (1, 2, 2, 2, 3), dict(mode="bicubic")),
    ((1, 1, 3, 3), (1, 2, 2, 2), dict(mode="area")),
    ((1, 1, 3, 3), (1, 2, 2, 2), dict(padding_mode="circular")),
]


@pytest.mark.parametrize("x_shape,grid_shape,kw", BAD)
def test_grid_sample_errors_say_what_torch_says(x_shape, grid_shape, kw):
    with pytest.raises(Exception) as theirs:
        TF.grid_sample(torch.zeros(x_shape), torch.zeros(grid_shape), align_corners=False,
                       **kw)
    with pytest.raises((ValueError, TypeError)) as ours:
        F.grid_sample(fnn.zeros(x_shape), fnn.zeros(grid_shape), align_corners=False, **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("theta_shape,size", [((1, 2, 3), (1, 1, 2, 2, 2)),
                                              ((1, 3, 4), (1, 1, 2, 2)),
                                              ((1, 2, 3), (1, 1, 2)),
                                              ((1, 2, 3), (1, 0, 2, 2))])
def test_affine_grid_errors_say_what_torch_says(theta_shape, size):
    with pytest.raises(Exception) as theirs:
        TF.affine_grid(torch.zeros(theta_shape), size, align_corners=False)
    with pytest.raises(type(theirs.value)) as ours:
        F.affine_grid(fnn.zeros(theta_shape), size, align_corners=False)
    # theirs prints theta's torch.Size([1, 2, 3]), ours the list [1, 2, 3]
    assert str(ours.value) == str(theirs.value).replace("torch.Size([", "[").replace("])", "]")
