"""3-D pooling as PyTorch's: ``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d`` over
x (N, C, D, H, W) or (C, D, H, W).

A box window is separable, so each is the 2-D op twice (:mod:`fastnn.ops.pooling`): first
over (H, W) with the depth folded into the channels, (N, C*D, H, W), then over D with the
pooled (H, W) plane flattened into a width, (N, C, D, H'*W'), with a (KD, 1) window. The
output size per axis is the 2-D op's (``ceil_mode`` included), and so are the gradients:

- max: the max over the box is the max over depth of the maxima over (H, W); padding
  takes no part in either. Each stage gives a window's gradient to one position, the
  first equal to its max (a NaN window's last NaN), so the two pick the box's first max
  in row-major (d, h, w) order (its last NaN): PyTorch's index, ties included;
- average: the sum over the box divided by KD*KH*KW, or with
  ``count_include_pad=False`` by the count of real elements, which for a box is the
  product of the per-axis counts; ``divisor_override`` rescales the full-box mean;
- adaptive average: PyTorch's windows per axis are independent, so the two stages'
  averaging matrices compose to the 3-D one.
"""

from __future__ import annotations

from fastnn.ops.conv3d import triple
from fastnn.ops.gathering import gather
from fastnn.ops.movement import reshape
from fastnn.ops.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _batched(op: str, x) -> tuple:
    """x as (N, C, D, H, W), and whether a batch axis was added."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim not in (4, 5):
        raise ValueError(f"{op}: expected input (N, C, D, H, W) or (C, D, H, W), got shape "
                         f"{x.shape}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: expected a floating-point tensor, got {x._dtype.name}")
    return (x, False) if x.ndim == 5 else (reshape(x, (1,) + x.shape), True)


def _separable(x, added, planes, depth):
    """``planes`` on (N, C*D, H, W), then ``depth`` on (N, C, D, H'*W'), as (N, C, D', H', W')."""
    n, c, d, h, w = x.shape
    inner = planes(reshape(x, (n, c * d, h, w)))
    oh, ow = inner.shape[-2:]
    out = depth(reshape(inner, (n, c, d, oh * ow)))
    out = reshape(out, (n, c, out.shape[2], oh, ow))
    return reshape(out, out.shape[1:]) if added else out


def _windows(op, kernel_size, stride, padding, dilation=1):
    kernel = triple(op, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None or stride == () else triple(op, "stride", stride, 1)
    return kernel, stride, triple(op, "padding", padding, 0), triple(op, "dilation",
                                                                      dilation, 1)


@public()
def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over each (KD, KH, KW) window of x (N, C, D, H, W) or (C, D, H, W), PyTorch's
    max_pool3d. ``return_indices=True`` also returns each max's flat index into its
    (D, H, W) volume (int64), as PyTorch's (for max_unpool3d)."""
    x, added = _batched("max_pool3d", x)
    k, s, p, d = _windows("max_pool3d", kernel_size, stride, padding, dilation)
    if return_indices:
        return _max_with_indices(x, added, k, s, p, d, ceil_mode)
    return _separable(
        x, added,
        lambda t: max_pool2d(t, k[1:], s[1:], p[1:], d[1:], ceil_mode),
        lambda t: max_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode))


def _max_with_indices(x, added, k, s, p, d, ceil_mode) -> tuple:
    """The two stages of :func:`max_pool3d` with their indices: the depth stage's index
    names the depth d' whose (H, W) maximum won, the plane stage's the (h, w) within that
    depth, so the volume's index is d' * H * W + (h * W + w)."""
    n, c, depth, h, w = x.shape
    planes, plane_index = max_pool2d(reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:],
                                     d[1:], ceil_mode, return_indices=True)
    oh, ow = planes.shape[-2:]
    out, depth_index = max_pool2d(reshape(planes, (n, c, depth, oh * ow)), (k[0], 1),
                                  (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode,
                                  return_indices=True)
    won = depth_index // (oh * ow)  # (N, C, D', H'*W'): the winning depth of each output
    within = gather(reshape(plane_index, (n, c, depth, oh * ow)), 2, won)
    index = won * (h * w) + within
    shape = (n, c, out.shape[2], oh, ow)
    out, index = reshape(out, shape), reshape(index, shape)
    return (reshape(out, shape[1:]), reshape(index, shape[1:])) if added else (out, index)


@public()
def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over each (KD, KH, KW) window of x (N, C, D, H, W) or (C, D, H, W), PyTorch's
    avg_pool3d: padding counts as zeros unless ``count_include_pad=False``."""
    x, added = _batched("avg_pool3d", x)
    k, s, p, _ = _windows("avg_pool3d", kernel_size, stride, padding)
    if divisor_override is not None and (isinstance(divisor_override, bool) or not
                                         isinstance(divisor_override, int) or
                                         divisor_override == 0):
        raise ValueError(f"avg_pool3d: divisor_override must be a non-zero int, got "
                         f"{divisor_override!r}")
    summed = None if divisor_override is None else 1  # window sums, divided once after
    out = _separable(
        x, added,
        lambda t: avg_pool2d(t, k[1:], s[1:], p[1:], ceil_mode, count_include_pad, summed),
        lambda t: avg_pool2d(t, (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode,
                             count_include_pad, summed))
    return out if divisor_override is None else out * (1.0 / divisor_override)


@public()
def adaptive_avg_pool3d(x, output_size):
    """Average pooling of x (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (an int, or
    a triple whose None keeps that size), PyTorch's adaptive_avg_pool3d."""
    x, added = _batched("adaptive_avg_pool3d", x)
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 3:
            raise ValueError(f"adaptive_avg_pool3d: output_size must be an int or 3 values, "
                             f"got {output_size!r}")
        size = tuple(n if o is None else o for o, n in zip(output_size, x.shape[2:]))
    else:
        size = (output_size,) * 3
    size = triple("adaptive_avg_pool3d", "output_size", size, 1)
    return _separable(x, added, lambda t: adaptive_avg_pool2d(t, size[1:]),
                      lambda t: adaptive_avg_pool2d(t, (size[0], None)))
