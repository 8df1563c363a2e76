"""Resizing as PyTorch's ``interpolate`` (and ``upsample``), ``pixel_shuffle`` and
``pixel_unshuffle``, composed from index_select, reshape and elementwise ops.

``interpolate`` resizes the spatial axes of (N, C, *spatial) one axis at a time; for
output index i along an axis of input size n, output size m:

- nearest: source floor(i * scale) (with 2 spatial dims, i // 2 when m = 2 n and the
  identity when m = n, as PyTorch's 2-D kernel), nearest-exact: floor((i + 0.5) *
  scale), clamped to n - 1;
- linear (linear, bilinear, trilinear): with align_corners, source i (n - 1) / (m - 1);
  without, (i + 0.5) scale - 0.5 clamped at 0; then (1 - w) x[floor] + w x[floor + 1];
  an axis that keeps its size is copied, whatever the scale, as PyTorch's;
- bicubic: the same source (not clamped), then Keys' cubic convolution (a = -0.75) over the
  four neighbours floor - 1 .. floor + 2, indices clamped to the edge, as PyTorch;
- area: adaptive average pooling to the output size (1-D, 2-D and 3-D).

``scale`` is 1 / scale_factor when a scale factor is given (and not
``recompute_scale_factor``), else n / m, as PyTorch; the indices and weights are computed
in the input's precision (float32 for float32), as PyTorch's kernels do.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from fastnn.api.args import integer
from fastnn.ops import pooling, pooling3d, resample_aa
from fastnn.ops.movement import reshape
from fastnn.ops.selecting import as_index, index_select_tensor
from fastnn.ops.shaping import permute
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor

MODES = {"nearest": None, "nearest-exact": None, "linear": 1, "bilinear": 2,
         "trilinear": 3, "bicubic": 2, "area": None}  # mode -> the spatial rank it needs
INTERPOLATING = ("linear", "bilinear", "trilinear", "bicubic")
CUBIC_A = -0.75  # PyTorch's bicubic kernel parameter


def _per_axis(name: str, value, rank: int, kind) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) != rank:
            raise ValueError(f"interpolate: {name} must have {rank} entries for {rank} spatial "
                             f"dims, got {value!r}")
        return tuple(kind(v) for v in value)
    return (kind(value),) * rank


def _sizes(x: Tensor, size, scale_factor, recompute) -> tuple:
    """(output sizes, scale factors or None per axis)."""
    rank = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        sizes = _per_axis("size", size, rank, lambda v: integer("interpolate", "size", v, 0))
        return sizes, (None,) * rank

    def positive(v):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
            raise ValueError(f"interpolate: scale_factor must be positive numbers, got {v!r}")
        return float(v)

    scales = _per_axis("scale_factor", scale_factor, rank, positive)
    sizes = tuple(math.floor(n * s) for n, s in zip(x.shape[2:], scales))
    return sizes, ((None,) * rank if recompute else scales)


def _source_scale(n: int, m: int, scale, align_corners: bool, dtype) -> object:
    if align_corners:
        return dtype((n - 1) / (m - 1)) if m > 1 else dtype(0)
    return dtype(1.0 / scale) if scale is not None else dtype(n / m)


def _nearest_axis(x: Tensor, axis: int, m: int, scale, exact: bool, planar: bool,
                  dtype) -> Tensor:
    n = x.shape[axis]
    # NOTE: PyTorch's 2-D nearest on CPU (``planar``) copies an axis that keeps its size
    # and takes i // 2 for one that doubles, whatever the scale_factor (its small-output
    # path; its vectorized path for large planes uses the scale); its 1-D and 3-D kernels
    # and nearest-exact use the scale, so 1.1 on a length of 7 moves indices past 1
    if m == n and (scale is None or (planar and not exact)):
        return x
    ratio = _source_scale(n, m, scale, False, dtype)
    pos = np.arange(m, dtype=dtype)
    src = np.floor((pos + dtype(0.5)) * ratio if exact else pos * ratio).astype(np.int64)
    if planar and not exact and m == 2 * n:
        src = np.arange(m) // 2
    return index_select_tensor(x, axis, as_index("interpolate", np.minimum(src, n - 1),
                                                 x._device))


def _cubic_weights(t, dtype) -> list:
    """Keys' cubic convolution weights of the taps -1, 0, 1, 2 at fraction t."""
    a = dtype(CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = dtype(1)
    return [far(t + one), near(t), near(one - t), far(one - t + one)]


def _cubic_axis(x: Tensor, axis: int, m: int, scale, align_corners: bool, dtype) -> Tensor:
    n = x.shape[axis]
    ratio = _source_scale(n, m, scale, align_corners, dtype)
    pos = np.arange(m, dtype=dtype)
    src = pos * ratio if align_corners else (pos + dtype(0.5)) * ratio - dtype(0.5)
    base = np.floor(src).astype(np.int64)
    weights = _cubic_weights((src - base).astype(dtype), dtype)
    shape = (m,) + (1,) * (x.ndim - axis - 1)
    out = None
    for tap, weight in zip(range(-1, 3), weights):
        index = as_index("interpolate", np.clip(base + tap, 0, n - 1), x._device)
        term = index_select_tensor(x, axis, index) * tensor(
            weight.astype(dtype).reshape(shape), dtype=x.dtype, device=x.device)
        out = term if out is None else out + term
    return out


def _linear_axis(x: Tensor, axis: int, m: int, scale, align_corners: bool, dtype) -> Tensor:
    n = x.shape[axis]
    ratio = _source_scale(n, m, scale, align_corners, dtype)
    pos = np.arange(m, dtype=dtype)
    src = pos * ratio if align_corners else np.maximum((pos + dtype(0.5)) * ratio - dtype(0.5),
                                                       dtype(0))
    low = np.minimum(np.floor(src).astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    weight = np.clip(src - low, 0, 1).astype(dtype)
    shape = (m,) + (1,) * (x.ndim - axis - 1)
    w_high = tensor(weight.reshape(shape), dtype=x.dtype, device=x.device)
    w_low = tensor((dtype(1) - weight).reshape(shape), dtype=x.dtype, device=x.device)
    pick = [index_select_tensor(x, axis, as_index("interpolate", i, x._device))
            for i in (low, high)]
    return pick[0] * w_low + pick[1] * w_high


@public()
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None, antialias: bool = False):
    """PyTorch's interpolate of (N, C, *spatial): modes nearest, nearest-exact, linear (1
    spatial dim), bilinear (2), trilinear (3), bicubic (2), area (1, 2 or 3); ``size`` or
    ``scale_factor`` (a number or one per spatial dim); ``align_corners`` for the
    interpolating modes (default False); ``antialias=True`` with bilinear and bicubic
    (:mod:`fastnn.ops.resample_aa`)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate: input must be a Tensor, got {type(input).__name__}")
    if mode not in MODES:
        raise ValueError(f"interpolate: mode must be one of {', '.join(MODES)}, got {mode!r}")
    rank = input.ndim - 2
    if rank < 1 or (MODES[mode] is not None and MODES[mode] != rank):
        need = f"{MODES[mode] + 2}-D" if MODES[mode] else "at least 3-D"
        raise ValueError(f"interpolate: mode {mode!r} needs a {need} (N, C, *spatial) input, "
                         f"got shape {input.shape}")
    linear = mode in INTERPOLATING
    if align_corners is not None and not linear:
        raise ValueError("interpolate: align_corners option can only be set with the "
                         "interpolating modes: linear | bilinear | bicubic | trilinear")
    if antialias and mode not in resample_aa.FILTERS:
        raise ValueError(f"interpolate: antialias=True works with modes bilinear and bicubic "
                         f"only (as PyTorch's), got mode {mode!r}")
    if not input._dtype.is_floating and linear:
        raise TypeError(f"interpolate: mode {mode!r} needs a floating-point input, got "
                        f"{input._dtype.name}")
    sizes, scales = _sizes(input, size, scale_factor, bool(recompute_scale_factor))
    if mode == "area":
        return _area(input, sizes)
    if any(m < 1 for m in sizes) or any(n < 1 for n in input.shape[2:]):
        raise ValueError(f"interpolate: input {input.shape} and output sizes {sizes} must be "
                         f"non-empty")
    # as PyTorch's kernels: indices and weights in the input's precision, float32 for half
    double = input._dtype.is_floating and np.dtype(input._dtype.numpy).itemsize == 8
    dtype = np.float64 if double else np.float32
    out = input
    for k, (m, scale) in enumerate(zip(sizes, scales)):
        axis = 2 + k
        if antialias:
            ratio = _source_scale(out.shape[axis], m, scale, bool(align_corners), dtype)
            out = resample_aa.resize_axis(out, axis, m, ratio, mode, dtype)
        elif mode == "bicubic":
            out = _cubic_axis(out, axis, m, scale, bool(align_corners), dtype)
        elif linear:
            if m != out.shape[axis]:  # PyTorch copies an axis that keeps its size
                out = _linear_axis(out, axis, m, scale, bool(align_corners), dtype)
        else:
            out = _nearest_axis(out, axis, m, scale, mode == "nearest-exact", rank == 2, dtype)
    # a new tensor, as PyTorch's, even where every axis kept its size
    return input.clone() if out is input else out


def _area(x: Tensor, sizes: tuple) -> Tensor:
    """mode='area': PyTorch's adaptive average pooling to ``sizes``."""
    if len(sizes) > 3:
        raise ValueError(f"interpolate: mode 'area' supports 1, 2 or 3 spatial dims, got "
                         f"input {x.shape}")
    pool = (pooling.adaptive_avg_pool1d, pooling.adaptive_avg_pool2d,
            pooling3d.adaptive_avg_pool3d)[len(sizes) - 1]
    return pool(x, sizes[0] if len(sizes) == 1 else sizes)


@public()
def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners=None) -> Tensor:
    """PyTorch's (deprecated) upsample: :func:`interpolate` with the same arguments."""
    return interpolate(input, size, scale_factor, mode, align_corners)


@public()
def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """PyTorch's (deprecated) upsample_nearest: :func:`interpolate` with mode nearest."""
    return interpolate(input, size, scale_factor, "nearest")


@public()
def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """PyTorch's (deprecated) upsample_bilinear: :func:`interpolate`, bilinear with
    align_corners=True."""
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def _factor(op: str, x, factor, dim_name: str) -> int:
    factor = integer(op, dim_name, factor)
    if not isinstance(x, Tensor) or x.ndim < 3:
        raise ValueError(f"{op}: expected an input of at least 3 dims (*, C, H, W), got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    return factor


@public()
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """PyTorch's pixel_shuffle: (*, C r^2, H, W) -> (*, C, H r, W r), out[c, h r + i, w r + j]
    = in[c r^2 + i r + j, h, w]."""
    r = _factor("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the {c} channels of input {input.shape} must be "
                         f"divisible by upscale_factor**2 = {r * r}")
    k = len(lead)
    x = reshape(input, tuple(lead) + (c // (r * r), r, r, h, w))
    x = permute(x, tuple(range(k)) + tuple(k + i for i in (0, 3, 1, 4, 2)))
    return reshape(x, tuple(lead) + (c // (r * r), h * r, w * r))


@public()
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """PyTorch's pixel_unshuffle, the inverse of :func:`pixel_shuffle`: (*, C, H r, W r) ->
    (*, C r^2, H, W)."""
    r = _factor("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height and width of input {input.shape} must be "
                         f"divisible by downscale_factor={r}")
    k = len(lead)
    x = reshape(input, tuple(lead) + (c, h // r, r, w // r, r))
    x = permute(x, tuple(range(k)) + tuple(k + i for i in (0, 2, 4, 1, 3)))
    return reshape(x, tuple(lead) + (c * r * r, h // r, w // r))


@public()
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """PyTorch's channel_shuffle: the channels of (N, C, *) read as (N, groups, C / groups, *)
    and returned as (N, C / groups, groups, *), flattened back."""
    groups = integer("channel_shuffle", "groups", groups)
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ValueError(f"channel_shuffle: expected an input of 3 or more dims (N, C, *), "
                         f"got {getattr(input, 'shape', type(input).__name__)}")
    n, c, *rest = input.shape
    if c % groups:
        raise ValueError(f"channel_shuffle: the {c} channels must be divisible by "
                         f"groups={groups}")
    x = reshape(input, (n, groups, c // groups) + tuple(rest))
    x = permute(x, (0, 2, 1) + tuple(range(3, x.ndim)))
    return reshape(x, input.shape)
