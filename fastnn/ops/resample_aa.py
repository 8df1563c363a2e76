"""``interpolate(..., antialias=True)``, PyTorch's (PIL's) antialiased bilinear and bicubic
resizing: along each axis, output i is a normalised weighted sum of the inputs within
``support`` of its centre, where a downscale by ``scale`` (= n / m) widens the filter by
``scale``; an upscale is plain interpolation with the edge taps renormalised.

For output i: centre c = scale (i + 1/2); support s = (taps / 2) scale when scale >= 1,
else taps / 2 (taps 2 for bilinear, 4 for bicubic); inputs j from max(int(c - s + 1/2), 0)
to min(int(c + s + 1/2), n) - 1, weight filter((j - c + 1/2) / max(scale, 1)), divided by
their sum. The filters: triangle max(0, 1 - |x|), and Keys' cubic with a = -0.5. The
weights form an (m, n) matrix per axis, applied with a matmul (its gradient is the
transposed matrix's).
"""

from __future__ import annotations

import numpy as np

from fastnn.ops.tensor import Tensor, tensor


def _triangle(x):
    return np.maximum(0.0, 1.0 - np.abs(x))


def _cubic(x, a=-0.5):
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


FILTERS = {"bilinear": (2, _triangle), "bicubic": (4, _cubic)}


def weights(n: int, m: int, scale: float, mode: str, dtype) -> np.ndarray:
    """The (m, n) matrix of one axis (``scale``: input positions per output position)."""
    taps, fn = FILTERS[mode]
    support = taps / 2 * scale if scale >= 1.0 else taps / 2
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    out = np.zeros((m, n), dtype=np.float64)
    for i in range(m):
        centre = scale * (i + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n)
        w = fn((np.arange(lo, hi) - centre + 0.5) * inv)
        total = w.sum()
        out[i, lo:hi] = w / total if total != 0.0 else w
    return out.astype(dtype)


def resize_axis(x: Tensor, axis: int, m: int, scale: float, mode: str, dtype) -> Tensor:
    """x resized to ``m`` along ``axis`` by the antialiasing filter of ``mode``."""
    matrix = weights(x.shape[axis], m, float(scale), mode, dtype)
    w = tensor(np.ascontiguousarray(matrix.T), dtype=x.dtype, device=x.device)
    return (x.movedim(axis, -1) @ w).movedim(-1, axis)
