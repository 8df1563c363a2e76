"""embedding_bag and bilinear, as PyTorch's ``F.embedding_bag`` and ``F.bilinear``.

embedding_bag: bag b is the rows of ``weight`` at input[offsets[b]:offsets[b + 1]] (a 1-d
input with ``offsets``) or at input[b] (a 2-d input), reduced to one row:

    sum:  sum_i w_i weight[idx_i]   (w_i = per_sample_weights, else 1)
    mean: sum_i weight[idx_i] / count,   max: the elementwise max over the bag

entries equal to ``padding_idx`` are left out (and not counted); an empty bag gives zeros.
The bags are laid out densely as (B, longest bag, dim) with a mask, so the gradient (of the
weight and of per_sample_weights) comes from the gather's rule; max's goes to the first
maximal entry, as PyTorch's.

bilinear: y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o], as one product
x1 @ W' (W' = W as (in1, out * in2)) and a sum over in2.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.ops import elementwise as ew
from fastnn.ops import movement
from fastnn.ops.gathering import embedding, renorm_rows_
from fastnn.ops.nnops import matmul
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, full, tensor

MODES = ("sum", "mean", "max")


def _host_ints(name: str, t) -> np.ndarray:
    if not isinstance(t, Tensor) or t.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"embedding_bag: {name} must be an int64 or int32 tensor, got "
                        f"{getattr(t, 'dtype', type(t).__name__)}")
    return np.asarray(t.numpy()).astype(np.int64)


def _bags(input, offsets, include_last_offset):
    """(flat indices, bag starts, bag ends) on the host."""
    values = _host_ints("input", input)
    if values.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-d input (each row "
                             "is one bag)")
        bags, length = values.shape
        starts = np.arange(bags) * length
        return values.reshape(-1), starts, starts + length
    if values.ndim != 1:
        raise ValueError(f"embedding_bag: input must be 1-d (with offsets) or 2-d (B, N), "
                         f"got shape {values.shape}")
    if offsets is None:
        raise ValueError("embedding_bag: a 1-d input needs offsets (the start of each bag)")
    starts = _host_ints("offsets", offsets)
    if starts.ndim != 1:
        raise ValueError(f"embedding_bag: offsets must be 1-d, got shape {starts.shape}")
    if include_last_offset:
        if not starts.size:
            raise ValueError("embedding_bag: with include_last_offset, offsets needs at least "
                             "one entry")
        ends_last, starts = starts[-1], starts[:-1]
    else:
        ends_last = values.size
    if starts.size and starts[0] != 0:
        raise ValueError(f"embedding_bag: offsets[0] must be 0 (the first bag starts at the "
                         f"first index), got {starts[0]}")
    ends = np.append(starts[1:], ends_last) if starts.size else starts
    if np.any(ends < starts) or (starts.size and ends[-1] > values.size):
        raise ValueError(f"embedding_bag: offsets must be non-decreasing and at most the "
                         f"input's length {values.size}, got {starts.tolist()}")
    return values, starts, ends


@public()
def embedding_bag(input, weight: Tensor, offsets=None, max_norm=None, norm_type=2.0,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings; see the module. Output (bags, dim)."""
    if mode not in MODES:
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ValueError("embedding_bag: weight must be a 2-d tensor (num_embeddings, dim)")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError(f"embedding_bag: per_sample_weights is only supported for "
                         f"mode='sum', got mode={mode!r}")
    if per_sample_weights is not None and (not isinstance(per_sample_weights, Tensor) or
                                           per_sample_weights.shape != input.shape):
        raise ValueError(f"embedding_bag: per_sample_weights must be a tensor of the input's "
                         f"shape {input.shape}, got {getattr(per_sample_weights, 'shape', None)}")
    flat, starts, ends = _bags(input, offsets, include_last_offset)
    num = weight.shape[0]
    if flat.size and (flat.min() < 0 or flat.max() >= num):
        raise IndexError(f"embedding_bag: indices must be in [0, {num}), got values from "
                         f"{flat.min()} to {flat.max()}")
    if padding_idx is not None:
        padding_idx = int(padding_idx) % num
    bags, dim = starts.size, weight.shape[1]
    longest = int((ends - starts).max()) if bags else 0
    # (B, longest) positions into flat, and which of them are real entries of the bag
    pos = starts[:, None] + np.arange(longest)[None, :]
    valid = pos < ends[:, None]
    pos = np.where(valid, pos, 0)
    if flat.size:
        valid &= flat[pos] != padding_idx if padding_idx is not None else True
    dev = weight.device
    if max_norm is not None and flat.size:
        renorm_rows_(weight, tensor(flat, device=dev), float(max_norm), float(norm_type))
    if not flat.size or not longest:
        return full((bags, dim), 0.0, weight.dtype, dev)
    indices = np.where(valid, flat[pos], 0)
    rows = embedding(tensor(indices, device=dev), weight)  # (B, longest, dim)
    if scale_grad_by_freq:  # each row's gradient over its count in the input
        counts = np.bincount(flat, minlength=num)[indices][..., None]
        frozen = rows.detach()
        rows = ew.add(frozen, ew.mul(ew.sub(rows, frozen),
                                     tensor(1.0 / counts, dtype=weight.dtype, device=dev)))
    keep = tensor(valid[..., None], device=dev)
    if mode == "max":
        # left-out entries are -inf, or 0 in an empty bag (whose max is then 0)
        fill = np.where(valid.any(1), -math.inf, 0.0)[:, None, None]
        return ew.where(keep, rows, tensor(fill, dtype=weight.dtype, device=dev)).max(
            dim=1).values
    scale = keep.to(weight.dtype)
    if per_sample_weights is not None:
        psw = movement.reshape(per_sample_weights, (-1,))[tensor(pos, device=dev)]
        scale = ew.mul(scale, movement.reshape(psw, (bags, longest, 1)))
    total = movement.sum(ew.mul(rows, scale), 1)
    if mode == "sum":
        return total
    count = np.maximum(valid.sum(1), 1)[:, None].astype(np.float64)
    return ew.div(total, tensor(count, dtype=weight.dtype, device=dev))


@public()
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    """x1^T W x2 + b over the last axes: weight (out, in1, in2), bias (out,)."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bilinear: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim != 3 or input1.ndim == 0 or input1.shape[-1] != weight.shape[1] or \
            input2.shape[-1:] != weight.shape[2:] or input1.shape[:-1] != input2.shape[:-1]:
        raise ValueError(f"bilinear: input1 {input1.shape} and input2 {input2.shape} must be "
                         f"(..., in1) and (..., in2) with one batch shape, for weight "
                         f"(out, in1, in2) = {weight.shape}")
    out, in1, in2 = weight.shape
    flat = movement.reshape(movement.transpose(weight, (1, 0, 2)), (in1, out * in2))
    left = movement.reshape(matmul(input1, flat), input1.shape[:-1] + (out, in2))
    x2 = movement.reshape(input2, input2.shape[:-1] + (1, in2))
    y = movement.sum(ew.mul(left, x2), -1)
    return y if bias is None else ew.add(y, bias)
