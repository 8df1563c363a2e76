"""Spatial transformers as PyTorch's ``affine_grid`` and ``grid_sample``, composed from
floor, round, where, index_select and arithmetic, so that the tape differentiates them with
respect to the input, the grid and theta, on every backend.

``grid_sample`` reads input (N, C, *spatial) at the points of grid (N, *out, rank), whose
last axis holds x, y (, z) in [-1, 1] (x runs along the last spatial axis). Per axis of
size n, a grid value g becomes the pixel coordinate

- align_corners: (g + 1) (n - 1) / 2 (-1 and 1 are the centres of the corner pixels);
- otherwise: (g + 1) n / 2 - 0.5 (-1 and 1 are the outer edges of the corner pixels);

then ``padding_mode`` maps it: zeros keeps it (points outside read 0, per corner), border
clips it to [0, n - 1], reflection reflects it about the borders (the pixel centres with
align_corners, the edges without) and then clips. Modes:

- bilinear (trilinear for 5-D): the 2^rank corners floor(c), floor(c) + 1 weighted by
  (1 - f) and f, f = c - floor(c); the grid's gradient is the one-sided (right)
  difference at integer coordinates, as PyTorch's;
- nearest: the pixel at round(c), halves to even (PyTorch's nearbyint); no grid gradient;
- bicubic (4-D only): Keys' kernel (a = -0.75) over the 4 x 4 taps floor(c) - 1 ..
  floor(c) + 2 of the unpadded coordinate, each tap's index padded on its own.

As PyTorch, clipping passes no gradient at the borders themselves.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.api.user_warning import warn_user
from fastnn.ops import elementwise as ew
from fastnn.ops.mathops import clamp, floor, round
from fastnn.ops.movement import reshape
from fastnn.ops.nnops import matmul
from fastnn.ops.resample import _cubic_weights
from fastnn.ops.selecting import index_select_tensor
from fastnn.ops.shaping import permute
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
_DEFAULT_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                    "align_corners=False since 1.3.0. Please specify align_corners=True if "
                    "the old behavior is desired. See the documentation of grid_sample for "
                    "details.")


def _warn(message: str) -> None:
    """A UserWarning at the user's line (past the autocast wrapper and this module)."""
    warn_user(message)


def _align(align_corners) -> bool:
    if align_corners is None:
        _warn(_DEFAULT_WARNING)
        return False
    return bool(align_corners)


# ---------------------------------------------------------------- coordinates


def _unnormalize(g: Tensor, n: int, align: bool) -> Tensor:
    """Grid values in [-1, 1] to pixel coordinates along an axis of size n."""
    if align:
        return (g + 1.0) * ((n - 1) / 2)
    return (g + 1.0) * (n / 2) - 0.5


def _clip(c: Tensor, n: int) -> Tensor:
    """c clipped to [0, n - 1]; the gradient passes strictly inside only (PyTorch's)."""
    inside = (c > 0.0) & (c < float(n - 1))
    return ew.where(inside, c, clamp(c.detach(), 0.0, float(n - 1)))


def _reflect(c: Tensor, n: int, align: bool) -> Tensor:
    """c reflected about low and high, the pixel centres (align) or edges of the axis."""
    low, high = (0.0, n - 1.0) if align else (-0.5, n - 0.5)
    if high == low:  # one pixel, align_corners: everything (inf, NaN) maps to it, no gradient
        return ew.where(c.detach() > math.inf, c.detach(), 0.0)
    span = high - low
    shifted = c - low
    sign = ew.where(shifted < 0.0, -1.0, 1.0).detach()
    distance = shifted * sign  # |c - low|, with PyTorch's gradient sign +1 at 0
    periods = floor(distance.detach() / (2 * span))
    extra = distance - periods * (2 * span)  # in [0, 2 span)
    return ew.where(extra > span, (2 * span) - extra, extra) + low


def _pad(c: Tensor, n: int, padding: str, align: bool) -> Tensor:
    if padding == "border":
        return _clip(c, n)
    if padding == "reflection":
        return _clip(_reflect(c, n, align), n)
    return c


# ---------------------------------------------------------------- reading pixels


class _Pixels:
    """The input as rows (N * prod(spatial), C), read at integer-valued coordinates."""

    def __init__(self, x: Tensor, out_shape: tuple):
        self.n, self.c, *spatial = x.shape
        self.spatial = tuple(spatial)
        self.out_shape = tuple(out_shape)
        rank = len(spatial)
        rows = permute(x, (0,) + tuple(range(2, 2 + rank)) + (1,))
        self.rows = reshape(rows, (self.n * math.prod(spatial), self.c))
        self.count = self.n * math.prod(out_shape)  # points read
        batch = np.repeat(np.arange(self.n, dtype=np.int64) * math.prod(spatial),
                          math.prod(out_shape)).reshape((self.n,) + self.out_shape)
        self.batch = tensor(batch, dtype=dtypes.int64, device=x.device)

    def read(self, coords: list) -> Tensor:
        """Values at ``coords`` (one float tensor (N, *out) per spatial axis, integer
        valued), 0 outside the input: a (N * prod(out), C) tensor."""
        valid = None
        for c, size in zip(coords, self.spatial):
            inside = (c >= 0.0) & (c <= float(size - 1))
            valid = inside if valid is None else valid & inside
        flat, stride = self.batch, 1
        for c, size in reversed(list(zip(coords, self.spatial))):
            safe = ew.where(valid, c.detach(), 0.0).to(dtypes.int64)  # NaN and far out: 0
            flat = flat + safe * stride
            stride *= size
        picked = index_select_tensor(self.rows, 0, reshape(flat, (self.count,)))
        keep = reshape(valid, (self.count, 1))
        return ew.where(keep, picked, 0.0)

    def column(self, weight: Tensor) -> Tensor:
        """A (N, *out) weight as a (N * prod(out), 1) column."""
        return reshape(weight, (self.count, 1))

    def finish(self, rows: Tensor) -> Tensor:
        """(N * prod(out), C) rows as the (N, C, *out) output."""
        out = reshape(rows, (self.n,) + self.out_shape + (self.c,))
        rank = len(self.out_shape)
        return permute(out, (0, rank + 1) + tuple(range(1, rank + 1)))


def _linear(pixels: _Pixels, coords: list) -> Tensor:
    lows = [floor(c.detach()) for c in coords]
    out = None
    for corner in np.ndindex(*(2,) * len(coords)):
        weight = None
        for up, low, c in zip(corner, lows, coords):
            w = c - low if up else (low + 1.0) - c  # as PyTorch's weights
            weight = w if weight is None else weight * w
        at = [low + 1.0 if up else low for up, low in zip(corner, lows)]
        term = pixels.read(at) * pixels.column(weight)
        out = term if out is None else out + term
    return out


def _bicubic(pixels: _Pixels, coords: list, padding: str, align: bool) -> Tensor:
    (y, x), (h, w) = coords, pixels.spatial
    y0, x0 = floor(y.detach()), floor(x.detach())
    wy = _cubic_weights(y - y0, float)
    wx = _cubic_weights(x - x0, float)
    out = None
    for i in range(4):
        row = _pad(y0 + float(i - 1), h, padding, align)
        for j in range(4):
            col = _pad(x0 + float(j - 1), w, padding, align)
            term = pixels.read([row, col]) * pixels.column(wx[j] * wy[i])
            out = term if out is None else out + term
    return out


# ---------------------------------------------------------------- public ops


def _check_sample(input, grid, mode, padding_mode) -> None:
    if mode not in MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, Tensor):
            raise TypeError(f"grid_sample: {name} must be a Tensor, got {type(t).__name__}")
    shapes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.ndim < 3 or grid.ndim < 1 or input.shape[0] != grid.shape[0]:
        raise ValueError(f"grid_sampler(): expected grid and input to have same batch size, "
                         f"but got {shapes}")
    if grid.shape[-1] != input.ndim - 2:
        raise ValueError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in "
                         f"last dimension, but got grid with sizes {list(grid.shape)}")
    for d in range(2, input.ndim):
        if input.shape[d] == 0:
            raise ValueError(f"grid_sampler(): expected input to have non-empty spatial "
                             f"dimensions, but input has sizes {list(input.shape)} with "
                             f"dimension {d} being empty")
    want = 4 if input.ndim == 4 else 5
    if input.ndim != want or grid.ndim != want:
        raise ValueError(f"grid_sampler(): expected {want}D input and grid with same number "
                         f"of dimensions, but got {shapes}")
    if mode == "bicubic" and want == 5:
        raise ValueError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input._dtype.is_floating or grid._dtype is not input._dtype:
        raise TypeError(f"grid_sample: input and grid must be floating tensors of one dtype, "
                        f"got {input._dtype.name} and {grid._dtype.name}")
    if input._device != grid._device:
        raise ValueError(f"grid_sample: input and grid must be on one device, got "
                         f"{input.device} and {grid.device}")


@public()
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners=None) -> Tensor:
    """PyTorch's grid_sample: input (N, C, H, W) read at grid (N, H_out, W_out, 2) gives
    (N, C, H_out, W_out); 5-D input (N, C, D, H, W) with grid (N, D_out, H_out, W_out, 3)
    likewise (bilinear there is trilinear). mode 'bilinear', 'nearest' or 'bicubic';
    padding_mode 'zeros', 'border' or 'reflection'; align_corners=None warns and means
    False, as PyTorch. See the module docstring for the conventions."""
    _check_sample(input, grid, mode, padding_mode)
    align = _align(align_corners)
    if input.dtype.name in ("float16", "bfloat16"):  # the weights and taps in float32: in
        # half precision the bicubic weights' rounding alone moved grid gradients by 0.1
        wide = grid_sample(input.to(dtypes.float32), grid.to(dtypes.float32), mode,
                           padding_mode, align)
        return wide.to(input.dtype)
    rank = input.ndim - 2
    pixels = _Pixels(input, grid.shape[1:-1])
    # grid's last axis is x, y (, z): the spatial axes in reverse
    raw = [grid[..., rank - 1 - k] for k in range(rank)]
    coords = [_unnormalize(g, n, align) for g, n in zip(raw, pixels.spatial)]
    if mode == "bicubic":
        return pixels.finish(_bicubic(pixels, coords, padding_mode, align))
    coords = [_pad(c, n, padding_mode, align) for c, n in zip(coords, pixels.spatial)]
    if mode == "nearest":
        rows = pixels.read([round(c.detach()) for c in coords])
        for c in coords:  # no gradient, but a zero one, as PyTorch's grid.grad
            rows = rows + pixels.column(ew.where(c.detach() > math.inf, c, 0.0))
        return pixels.finish(rows)
    return pixels.finish(_linear(pixels, coords))


def _base_axis(n: int, align: bool) -> np.ndarray:
    """PyTorch's linspace_from_neg_one: n points over [-1, 1], scaled by (n - 1) / n
    without align_corners; a single point is 0."""
    if n <= 1:
        return np.zeros(n)
    points = np.linspace(-1.0, 1.0, n)
    return points if align else points * ((n - 1) / n)


@public()
def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """PyTorch's affine_grid: theta (N, 2, 3) and size (N, C, H, W) give the grid
    (N, H, W, 2) of theta @ (x, y, 1) over the output's pixel centres (x along W);
    theta (N, 3, 4) and size (N, C, D, H, W) give (N, D, H, W, 3)."""
    align = _align(align_corners)
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid: theta must be a Tensor, got {type(theta).__name__}")
    if not theta._dtype.is_floating:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta._dtype.name}")
    given, size = size, tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    rank = len(size) - 2
    if theta.ndim != 3 or theta.shape[1:] != (rank, rank + 1):
        raise ValueError(f"Expected a batch of {rank}D affine matrices of shape "
                         f"Nx{rank}x{rank + 1} for size {given}. Got {list(theta.shape)}.")
    spatial = size[2:]
    if align and min(spatial) == 1:
        _warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
              "when align_corners=True. This is not an intended use case of affine_grid. "
              "See the documentation of affine_grid for details.")
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta holds {theta.shape[0]} matrices but size asks "
                         f"for a batch of {size[0]}")
    axes = np.meshgrid(*(_base_axis(n, align) for n in spatial), indexing="ij")
    # columns x, y (, z), 1: x runs along the last spatial axis
    base = np.stack([a.reshape(-1) for a in reversed(axes)] + [np.ones(axes[0].size)], -1)
    base = tensor(base.astype(theta._dtype.numpy), dtype=theta._dtype, device=theta.device)
    grid = matmul(base, permute(theta, (0, 2, 1)))  # (N, prod(spatial), rank)
    return reshape(grid, (size[0],) + spatial + (rank,))
