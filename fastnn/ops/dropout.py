"""Dropout as PyTorch's functional forms: ``dropout``, ``dropout1d/2d/3d``, ``alpha_dropout``
and ``feature_alpha_dropout``, composed from a uniform draw and elementwise ops.

With keep-mask m ~ Bernoulli(1 - p) (drawn on the device from a seed that fastnn's
generator gives, so ``fnn.manual_seed`` reproduces it):

- dropout: y = x * m / (1 - p); p = 1 gives zeros;
- dropout1d/2d/3d: the same with one m per channel (the mask broadcasts over the
  spatial axes);
- alpha_dropout: y = a (x m + alpha' (1 - m)) + b, the affine map that keeps SELU's zero
  mean and unit variance: alpha' = -scale * alpha of SELU, a = ((1 - p)(1 + p alpha'^2))^-1/2,
  b = -a alpha' p. ``feature_alpha_dropout`` draws one m per channel.

Each is the identity when ``training`` is False or p = 0, as PyTorch. ``inplace=True``
writes the result into ``input`` and returns it (PyTorch's spelling).
"""

from __future__ import annotations

import math
import numbers
import warnings

from fastnn.api import dtypes
from fastnn.api.args import flag, integer
from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, host_rng, rand

SELU_ALPHA_PRIME = 1.7580993408473766  # = SELU's scale * alpha; dropped units go to -this


def check_p(op: str, p) -> float:
    """``p`` as a float in [0, 1], or ValueError naming ``op``."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p!r}")
    return float(p)


def draw_seed() -> int:
    """A mask seed from fastnn's generator (``fnn.manual_seed`` reproduces the draws)."""
    return int(host_rng().integers(2**31))


def keep_mask(x: Tensor, shape: tuple, p: float, seed: int) -> Tensor:
    """The 0/1 keep-mask of ``shape`` (broadcasting against x), in x's floating dtype."""
    dtype = x.dtype if x.dtype.is_floating else dtypes.get_default_dtype()
    with no_grad():
        return (rand(shape, dtype=dtype, device=x.device, seed=seed) >= p).astype(dtype)


def feature_shape(op: str, x: Tensor, batched_rank: int) -> tuple:
    """The mask shape of channel dropout: one value per (N, C), or per C when unbatched.

    As PyTorch, dropout2d reads a 3-D input as (N, C, L), with a warning; dropout2d and
    dropout3d take inputs of other ranks with PyTorch's deprecation warning (dropout2d
    one mask value per element of its first two dims, dropout3d as one unbatched sample).
    """
    if op in ("dropout2d", "dropout3d") and x.ndim not in (batched_rank - 1, batched_rank):
        warnings.warn(f"{op}: Received a {x.ndim}-D input to {op}, which is deprecated and "
                      f"will result in an error in a future release (PyTorch's behaviour). To "
                      f"retain the behavior and silence this warning, please use dropout "
                      f"instead.", stacklevel=3)
        if op == "dropout2d" and x.ndim >= 2:  # (PyTorch's feature_dropout on it as it is)
            return x.shape[:2] + (1,) * (x.ndim - 2)
        if op == "dropout3d" and x.ndim >= 1:  # (a batch of one: a mask value per dim 0)
            return x.shape[:1] + (1,) * (x.ndim - 1)
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the "
                           f"input, got shape {x.shape}")
    if x.ndim not in (batched_rank - 1, batched_rank):
        spatial = batched_rank - 2
        raise ValueError(f"{op}: expected a {batched_rank - 1}-D (C, *{spatial} spatial) or "
                         f"{batched_rank}-D (N, C, *{spatial} spatial) input, got shape "
                         f"{x.shape}")
    lead = 1 if x.ndim == batched_rank - 1 else 2
    if op == "dropout2d" and x.ndim == 3:
        warnings.warn("dropout2d: a 3-D input is read as (N, C, L) and whole channels of "
                      "each sample are dropped (PyTorch's behaviour); use dropout1d for that",
                      stacklevel=3)
        lead = 2
    return x.shape[:lead] + (1,) * (x.ndim - lead)


def finish(x: Tensor, out: Tensor, inplace) -> Tensor:
    if flag("dropout", "inplace", inplace):
        return x.copy_(out)
    return out


def _check(op: str, x, p, training) -> float:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")
    flag(op, "training", training)
    return check_p(op, p)


def apply_dropout(x: Tensor, p: float, shape: tuple, seed) -> Tensor:
    """x * m / (1 - p) with the mask of ``shape`` drawn from ``seed`` (0 * x when p = 1)."""
    if p == 1.0:
        return x * 0.0
    seed = draw_seed() if seed is None else integer("dropout", "seed", seed, 0)
    return x * (keep_mask(x, shape, p, seed) * (1.0 / (1.0 - p)))


def apply_alpha_dropout(x: Tensor, p: float, shape: tuple, seed) -> Tensor:
    """SELU-preserving dropout (see the module docstring) with the mask of ``shape``."""
    if p == 1.0:
        return x * 0.0
    seed = draw_seed() if seed is None else integer("alpha_dropout", "seed", seed, 0)
    mask = keep_mask(x, shape, p, seed)
    a = 1.0 / math.sqrt((SELU_ALPHA_PRIME ** 2 * p + 1.0) * (1.0 - p))
    # PyTorch's b: (m - 1) * alpha' * a + alpha' * a * p
    b = (mask - 1.0) * (SELU_ALPHA_PRIME * a) + SELU_ALPHA_PRIME * a * p
    return x * (mask * a) + b


@public()
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
            *, seed=None) -> Tensor:
    """PyTorch's dropout: each element zeroed with probability ``p``, the rest scaled by
    1 / (1 - p); the identity unless ``training``. ``seed`` fixes the mask."""
    p = _check("dropout", input, p, training)
    if not training or p == 0.0:
        return input
    return finish(input, apply_dropout(input, p, input.shape, seed), inplace)


def _feature(op: str, rank: int):
    def fn(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
           *, seed=None) -> Tensor:
        p = _check(op, input, p, training)
        shape = feature_shape(op, input, rank)
        if not training or p == 0.0:
            return input
        return finish(input, apply_dropout(input, p, shape, seed), inplace)

    fn.__name__ = fn.__qualname__ = op
    spatial = rank - 2
    fn.__doc__ = (f"PyTorch's {op}: whole channels of a (N, C, *{spatial} spatial) or (C, "
                  f"*{spatial} spatial) input zeroed with probability ``p``, the rest scaled "
                  f"by 1 / (1 - p); the identity unless ``training``.")
    return public()(fn)


dropout1d = _feature("dropout1d", 3)
dropout2d = _feature("dropout2d", 4)
dropout3d = _feature("dropout3d", 5)


@public()
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False,
                  *, seed=None) -> Tensor:
    """PyTorch's alpha_dropout: dropout that keeps SELU's zero mean and unit variance
    (dropped elements take SELU's negative saturation, then an affine correction)."""
    p = _check("alpha_dropout", input, p, training)
    if not training or p == 0.0:
        return input
    return finish(input, apply_alpha_dropout(input, p, input.shape, seed), inplace)


@public()
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False, *, seed=None) -> Tensor:
    """PyTorch's feature_alpha_dropout: alpha_dropout with one mask value per channel of an
    (N, C, ...) input."""
    p = _check("feature_alpha_dropout", input, p, training)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: expected an (N, C, ...) input, got shape "
                         f"{input.shape}")
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    return finish(input, apply_alpha_dropout(input, p, shape, seed), inplace)
