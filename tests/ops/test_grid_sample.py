"""grid_sample and affine_grid without PyTorch: against the NumPy loop references of
fastnn.conformance.cases_grid (values and finite-difference gradients), hand-worked values
(nearest's halves to even, the padding modes), the spatial-transformer identity, the
align_corners=None warning and the errors for bad arguments."""

import itertools
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.conformance.cases_grid import affine_grid_ref, grid_sample_ref

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5)}


def _grid(rng, shape, low=-1.6, high=1.6):
    """Random points, some outside [-1, 1], and the corners and centre exactly."""
    grid = rng.uniform(low, high, size=shape)
    grid[0, 0, 0], grid[0, 0, 1], grid[-1, -1, -1] = (-1, -1), (0, 0), (1, 1)
    return grid


def _sample(x, grid, device, dtype="float64", **kw):
    xs = fnn.tensor(x.astype(dtype), device=device, requires_grad=True)
    gs = fnn.tensor(grid.astype(dtype), device=device, requires_grad=True)
    return xs, gs, F.grid_sample(xs, gs, **kw)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS,
                                                                      (False, True))))
def test_values_match_numpy_loop(device, dtype, mode, padding, align):
    rng = np.random.default_rng(1)
    x, grid = rng.normal(size=(2, 3, 4, 5)), _grid(rng, (2, 3, 6, 2))
    _, _, out = _sample(x, grid, device, dtype, mode=mode, padding_mode=padding,
                        align_corners=align)
    # the reference on the same (rounded) inputs, in float64
    want = grid_sample_ref(x.astype(dtype).astype(np.float64),
                           grid.astype(dtype).astype(np.float64), mode, padding, align)
    assert out.dtype == getattr(fnn, dtype)
    np.testing.assert_allclose(out.numpy(), want, **TOL[dtype])


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS,
                                                                      (False, True))))
def test_gradients_match_finite_differences(mode, padding, align):
    """d sum(out * w) / d input and / d grid of the op, against central differences of the
    NumPy reference (grid points off the kinks: ties and borders)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 2, 3, 4))
    grid = rng.uniform(-1.4, 1.4, size=(1, 2, 3, 2))
    w = rng.normal(size=(1, 2, 2, 3))
    xs, gs, out = _sample(x, grid, "cpu", mode=mode, padding_mode=padding,
                          align_corners=align)
    (out * fnn.tensor(w)).sum().backward()

    def numeric(arrays, which, h=1e-6):
        base = arrays[which]
        grad = np.zeros_like(base)
        for k in np.ndindex(base.shape):
            values = []
            for sign in (1, -1):
                moved = [a.copy() for a in arrays]
                moved[which][k] += sign * h
                values.append(np.sum(grid_sample_ref(*moved, mode, padding, align) * w))
            grad[k] = (values[0] - values[1]) / (2 * h)
        return grad

    np.testing.assert_allclose(xs.grad.numpy(), numeric([x, grid], 0), atol=1e-7)
    np.testing.assert_allclose(gs.grad.numpy(), numeric([x, grid], 1), atol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", PADDINGS)
def test_volumetric_matches_numpy_loop(device, mode, padding):
    rng = np.random.default_rng(3)
    x, grid = rng.normal(size=(2, 2, 3, 4, 2)), rng.uniform(-1.5, 1.5, size=(2, 2, 3, 2, 3))
    for align in (False, True):
        _, _, out = _sample(x, grid, device, mode=mode, padding_mode=padding,
                            align_corners=align)
        np.testing.assert_allclose(out.numpy(), grid_sample_ref(x, grid, mode, padding, align),
                                   **TOL["float64"])


def test_nearest_rounds_halves_to_even():
    """Pixel coordinates 0.5, 1.5 and 2.5 read pixels 0, 2 and 2 (nearbyint)."""
    x = np.arange(4.0).reshape(1, 1, 1, 4)
    pixel = np.array([0.5, 1.5, 2.5, 0.49, 1.51])
    grid = np.zeros((1, 1, 5, 2))
    grid[0, 0, :, 0] = (2 * pixel + 1) / 4 - 1  # align_corners=False: exact in binary
    _, _, out = _sample(x, grid, "cpu", mode="nearest", align_corners=False)
    np.testing.assert_array_equal(out.numpy().ravel(), [0, 2, 2, 0, 2])


def test_padding_modes_by_hand():
    """A 1 x 3 row [10, 20, 30] read at pixel coordinates -1, 2.25, 3.25 and 5
    (align_corners): zeros counts the corners inside only, border repeats the end pixels,
    reflection mirrors about the end pixels' centres (2.25 -> 1.75, 3.25 -> 0.75, 5 -> 1)."""
    x = np.array([10.0, 20.0, 30.0]).reshape(1, 1, 1, 3)
    pixel = np.array([-1.0, 2.25, 3.25, 5.0])
    grid = np.zeros((1, 1, 4, 2))
    grid[0, 0, :, 0] = pixel - 1  # align_corners=True on 3 pixels: g = c - 1
    want = {"zeros": [0, 30 * 0.75, 0, 0],
            "border": [10, 30, 30, 30],
            "reflection": [20, 27.5, 17.5, 20]}
    for padding, values in want.items():
        _, _, out = _sample(x, grid, "cpu", mode="bilinear", padding_mode=padding,
                            align_corners=True)
        np.testing.assert_allclose(out.numpy().ravel(), values, err_msg=padding)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_identity_transform_reproduces_the_input(device, mode, align):
    """A spatial transformer with the identity theta samples every pixel at its centre."""
    rng = np.random.default_rng(4)
    x = fnn.tensor(rng.normal(size=(2, 3, 5, 7)), device=device)
    theta = fnn.tensor(np.tile(np.eye(2, 3), (2, 1, 1)), device=device)
    grid = F.affine_grid(theta, x.shape, align_corners=align)
    out = F.grid_sample(x, grid, mode=mode, align_corners=align)
    np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-12)


def test_transformer_gradient_reaches_theta():
    rng = np.random.default_rng(5)
    x = fnn.tensor(rng.normal(size=(1, 1, 4, 4)))
    theta0 = np.array([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.07]]])  # no point on a kink

    def loss(theta):
        grid = affine_grid_ref(theta, (1, 1, 3, 3), False)
        return np.sum(grid_sample_ref(x.numpy(), grid, "bilinear", "border", False) ** 2)

    theta = fnn.tensor(theta0, requires_grad=True)
    grid = F.affine_grid(theta, (1, 1, 3, 3), align_corners=False)
    (F.grid_sample(x, grid, padding_mode="border", align_corners=False) ** 2).sum().backward()
    numeric = np.zeros_like(theta0)
    for k in np.ndindex(theta0.shape):
        step = np.zeros_like(theta0)
        step[k] = 1e-6
        numeric[k] = (loss(theta0 + step) - loss(theta0 - step)) / 2e-6
    np.testing.assert_allclose(theta.grad.numpy(), numeric, atol=1e-6)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 2, 3, 4)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_formula(device, size, align):
    rng = np.random.default_rng(6)
    theta = rng.normal(size=(size[0], len(size) - 2, len(size) - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn, as PyTorch
        got = F.affine_grid(fnn.tensor(theta, device=device), size, align_corners=align)
    np.testing.assert_allclose(got.numpy(), affine_grid_ref(theta, size, align), atol=1e-12)


@pytest.mark.parametrize("op", ["grid_sample", "affine_grid"])
def test_align_corners_none_warns_and_means_false(op):
    x = fnn.tensor(np.random.default_rng(7).normal(size=(1, 1, 3, 4)))
    theta = fnn.tensor(np.eye(2, 3)[None] * 0.7)
    grid = F.affine_grid(theta, (1, 1, 2, 3), align_corners=False)
    call = {"grid_sample": lambda corners: F.grid_sample(x, grid, align_corners=corners),
            "affine_grid": lambda corners: F.affine_grid(theta, (1, 1, 2, 3),
                                                         align_corners=corners)}[op]
    text = r"^Default grid_sample and affine_grid behavior has changed to align_corners=False "
    with pytest.warns(UserWarning, match=text + r"since 1\.3\.0\. ") as record:
        got = call(None)
    assert record[0].filename == __file__  # the caller's line, as PyTorch's warning
    np.testing.assert_array_equal(got.numpy(), call(False).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(False)


def _x(*shape):
    return fnn.zeros(shape)


BAD = [
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(1, 2, 2, 2), mode="linear",
                           align_corners=False), ValueError,
     r"expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'linear'"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(1, 2, 2, 2), padding_mode="edge",
                           align_corners=False), ValueError,
     r"expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'edge'"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(2, 2, 2, 2), align_corners=False), ValueError,
     r"expected grid and input to have same batch size, but got input with sizes "
     r"\[1, 1, 2, 2\] and grid with sizes \[2, 2, 2, 2\]"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(1, 2, 2, 3), align_corners=False), ValueError,
     r"expected grid to have size 2 in last dimension, but got grid with sizes"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(1, 2, 2, 2, 2), align_corners=False),
     ValueError, r"expected 4D input and grid with same number of dimensions"),
    (lambda: F.grid_sample(_x(1, 1, 0, 2), _x(1, 2, 2, 2), align_corners=False), ValueError,
     r"expected input to have non-empty spatial dimensions, but input has sizes "
     r"\[1, 1, 0, 2\] with dimension 2 being empty"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2, 2), _x(1, 2, 2, 2, 3), mode="bicubic",
                           align_corners=False), ValueError,
     r"bicubic interpolation only supports 4D input"),
    (lambda: F.grid_sample(_x(1, 1, 2, 2), _x(1, 2, 2, 2).double(), align_corners=False),
     TypeError, r"grid_sample: input and grid must be floating tensors of one dtype, got "
                r"float32 and float64"),
    (lambda: F.affine_grid(_x(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False), ValueError,
     r"Expected a batch of 3D affine matrices of shape Nx3x4 for size \(1, 1, 2, 2, 2\)"),
    (lambda: F.affine_grid(_x(1, 2, 3), (1, 1, 2), align_corners=False), NotImplementedError,
     r"affine_grid only supports 4D and 5D sizes"),
    (lambda: F.affine_grid(_x(1, 2, 3), (1, 0, 2, 2), align_corners=False), ValueError,
     r"Expected non-zero, positive output size\. Got \(1, 0, 2, 2\)"),
    (lambda: F.affine_grid(fnn.zeros((1, 2, 3), dtype=fnn.int64), (1, 1, 2, 2),
                           align_corners=False), ValueError,
     r"Expected theta to have floating point type, but got int64"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=range(len(BAD)))
def test_bad_arguments_raise(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_empty_batch_and_channels():
    for x_shape, g_shape in [((0, 2, 3, 3), (0, 2, 2, 2)), ((1, 0, 3, 3), (1, 2, 2, 2)),
                             ((1, 2, 3, 3), (1, 0, 2, 2))]:
        _, _, out = _sample(np.zeros(x_shape), np.zeros(g_shape), "cpu", align_corners=False)
        assert out.shape == (x_shape[0], x_shape[1]) + g_shape[1:3]

