"""Channel and SELU dropout layers: Dropout1d, Dropout2d, Dropout3d, AlphaDropout,
FeatureAlphaDropout (PyTorch's), over :mod:`fastnn.ops.dropout`.

Like :class:`~fastnn.nn.activation.Dropout`, each remembers the seed of its last mask in
``self.seed`` (drawn from fastnn's generator), so that ``reverse(x, grad_out)`` is the
gradient of the forward pass with that mask; on a fresh layer it draws one. Identity in
eval mode and when p = 0.
"""

from __future__ import annotations

from fastnn.api.args import flag, integer
from fastnn.nn.bases import _DropoutNd
from fastnn.nn.module import check_grad, check_tensor, tape_reverse
from fastnn.ops import dropout as ops


class _SeededDropout(_DropoutNd):
    FN = None  # the functional form: fn(x, p, shape, seed)

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = ops.check_p(type(self).__name__, p)
        self.inplace = flag(type(self).__name__, "inplace", inplace)
        self.seed = None

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"

    def _mask_shape(self, x):
        return x.shape

    def _run(self, x, seed):
        return type(self).FN(x, self.p, self._mask_shape(x), seed)

    def forward(self, x, seed=None):
        check_tensor(type(self).__name__, x)
        shape = self._mask_shape(x)  # checks the rank in eval mode too
        if not self.training or self.p == 0.0:
            return x
        self.seed = (ops.draw_seed() if seed is None
                     else integer(type(self).__name__, "seed", seed, 0))
        out = type(self).FN(x, self.p, shape, self.seed)
        return x.copy_(out) if self.inplace else out

    def reverse(self, x, grad_out, seed=None):
        name = type(self).__name__
        if not self.training or self.p == 0.0:
            self._mask_shape(check_tensor(name, x))
            return check_grad(name, x, grad_out), {}
        if seed is not None:
            self.seed = integer(f"{name}.reverse", "seed", seed, 0)
        elif self.seed is None:
            self.seed = ops.draw_seed()
        return tape_reverse(self, lambda t: self._run(t, self.seed), x, grad_out)


class _ChannelDropout(_SeededDropout):
    FN = staticmethod(ops.apply_dropout)
    RANK = 3
    OP = ""

    def _mask_shape(self, x):
        return ops.feature_shape(self.OP, x, self.RANK)


class Dropout1d(_ChannelDropout):
    """PyTorch's Dropout1d: whole channels of (N, C, L) or (C, L) zeroed with probability p,
    the rest scaled by 1 / (1 - p)."""

    RANK, OP = 3, "dropout1d"


class Dropout2d(_ChannelDropout):
    """PyTorch's Dropout2d: whole channels of (N, C, H, W) zeroed with probability p, the
    rest scaled by 1 / (1 - p); a 3-D input is read as (N, C, L), as PyTorch."""

    RANK, OP = 4, "dropout2d"


class Dropout3d(_ChannelDropout):
    """PyTorch's Dropout3d: whole channels of (N, C, D, H, W) or (C, D, H, W) zeroed with
    probability p, the rest scaled by 1 / (1 - p)."""

    RANK, OP = 5, "dropout3d"


class AlphaDropout(_SeededDropout):
    """PyTorch's AlphaDropout: dropout for SELU networks, keeping zero mean and unit variance
    (see :func:`fastnn.ops.dropout.alpha_dropout`)."""

    FN = staticmethod(ops.apply_alpha_dropout)


class FeatureAlphaDropout(_SeededDropout):
    """PyTorch's FeatureAlphaDropout: AlphaDropout with one mask value per channel of an
    (N, C, ...) input."""

    FN = staticmethod(ops.apply_alpha_dropout)

    def _mask_shape(self, x):
        if x.ndim < 2:
            raise ValueError(f"FeatureAlphaDropout: expected an (N, C, ...) input, got shape "
                             f"{x.shape}")
        return x.shape[:2] + (1,) * (x.ndim - 2)
