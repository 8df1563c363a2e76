"""PyTorch's ``normalize``, ``pairwise_distance`` and ``pdist``, composed from the p-norm.

- normalize: x / max(||x||_p over ``dim``, eps);
- pairwise_distance: ||x1 - x2 + eps||_p over the last dim (x1 and x2 broadcast);
- pdist: ||x_i - x_j||_p for every pair of rows i < j of one (N, M) input.

The norm is fastnn's ``norm`` (its gradient at a zero vector is 0, as PyTorch's).
"""

from __future__ import annotations

import numbers

from fastnn.api.args import flag, real
from fastnn.ops import elementwise as ew
from fastnn.ops.mathops import clamp
from fastnn.ops.reduction import norm
from fastnn.ops.structure import triu_indices
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor


def _p(op: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{op}: p must be a real number (2, 1, float('inf')...), got {p!r}")
    return float(p)


def _tensor(op: str, name: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")
    if not x._dtype.is_floating:
        raise TypeError(f"{op}: {name} must be floating point, got {x._dtype.name}")
    return x


@public()
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """PyTorch's normalize: x / max(||x||_p along ``dim``, eps)."""
    x = _tensor("normalize", "input", input)
    if out is not None:
        raise TypeError("normalize: out= is not supported; assign the result instead")
    denom = clamp(norm(x, _p("normalize", p), dim, True), min=real("normalize", "eps", eps))
    return ew.div(x, denom)


@public()
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """PyTorch's pairwise_distance: ||x1 - x2 + eps||_p over the last dim."""
    x1 = _tensor("pairwise_distance", "x1", x1)
    x2 = _tensor("pairwise_distance", "x2", x2)
    diff = ew.add(ew.sub(x1, x2), real("pairwise_distance", "eps", eps))
    keep = flag("pairwise_distance", "keepdim", keepdim)
    if diff.ndim == 0:
        return norm(diff, _p("pairwise_distance", p))
    return norm(diff, _p("pairwise_distance", p), -1, keep)


@public()
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """PyTorch's pdist: the p-norm distances between the rows of ``input`` (N, M), pair
    (i, j) for every i < j in row-major order: shape (N * (N - 1) / 2,)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pdist: input must be a Tensor, got {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input._dtype.is_floating:
        raise RuntimeError(f"pdist only supports floating-point dtypes, got "
                           f"{input._dtype.name}")
    p = _p("pdist", p)
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    rows = input.shape[0]
    first, second = triu_indices(rows, rows, 1, device=input.device)
    return norm(ew.sub(input[first], input[second]), p, -1)
