"""BatchNorm1d, BatchNorm2d and BatchNorm3d: PyTorch's batch normalisation layers.

Parameters weight (connective, 1) and bias (bias, 0) when ``affine`` (the bias not with
``bias=False``, PyTorch 2.13's keyword); buffers
running_mean (0), running_var (1) and num_batches_tracked (int64, 0) when
``track_running_stats``. In training the batch's statistics normalise and the
running ones are updated (the unbiased variance, as PyTorch); in eval the
running ones normalise. ``reverse`` is the tape's (the base class's), whose forward
runs inside ``keep_buffers()``: it updates no buffer.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import as_given, flag, integer, real
from fastnn.api.errors import ShapeError
from fastnn.nn import init
from fastnn.nn.module import Module, buffers_kept, check_tensor, const_init
from fastnn.nn.norm import reset_affine
from fastnn.ops import normalization
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import tensor


class RunningStats(Module):
    """What BatchNorm and InstanceNorm share: weight and bias (when ``affine``; the bias
    not with ``bias=False``), the running-statistics buffers (when
    ``track_running_stats``), and the repr."""

    def _init_stats(self, affine, dtype, device, bias=True) -> None:
        shape = (self.num_features,)
        self._has_bias = bool(affine) and flag(type(self).__name__, "bias", bias)
        self.weight = const_init(shape, 1.0, "connective", dtype, device) if affine else None
        self.bias = const_init(shape, 0.0, "bias", dtype, device) if self._has_bias else None
        if self.track_running_stats:
            float_dtype = dtypes.as_dtype(dtype if dtype is not None else
                                          dtypes.get_default_dtype())
            self.register_buffer("running_mean", tensor(np.zeros(shape), float_dtype, device))
            self.register_buffer("running_var", tensor(np.ones(shape), float_dtype, device))
            self.register_buffer("num_batches_tracked",
                                 tensor(np.array(0, dtype=np.int64), device=device))
        else:
            for buffer in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(buffer, None)

    def reset_running_stats(self) -> None:
        """running_mean back to 0, running_var to 1 and num_batches_tracked to 0, in place
        (when the layer tracks them; PyTorch's)."""
        if self.track_running_stats and self.running_mean is not None:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """The running statistics reset, and weight back to 1 and bias to 0 (PyTorch's)."""
        self.reset_running_stats()
        reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self._has_bias}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(RunningStats):
    DIMS: tuple = ()  # the input ranks this layer accepts
    LAYOUT = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True):
        super().__init__()
        name = type(self).__name__
        self.num_features = integer(name, "num_features", num_features)
        self.eps = as_given(real(name, "eps", eps), eps)
        self.momentum = None if momentum is None else as_given(real(name, "momentum", momentum),
                                                              momentum)
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        self._init_stats(affine, dtype, device, bias)

    def _check_input(self, x) -> None:
        check_tensor(type(self).__name__, x)
        if x.ndim not in self.DIMS or x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}): expected input "
                             f"{self.LAYOUT} with {self.num_features} channels, got {x.shape}")

    def forward(self, x):
        self._check_input(x)
        use_batch = self.training or self.running_mean is None
        update = self.training and self.running_mean is not None and not buffers_kept()
        momentum = self.momentum if self.momentum is not None else 0.0
        if update:
            count = self.num_batches_tracked
            rebind(count, count._device.ops.add(count._data, 1))
            if self.momentum is None:  # a cumulative average
                momentum = 1.0 / float(count.item())
        stats = (self.running_mean, self.running_var) if (update or not use_batch) else \
            (None, None)
        return self._batch_norm(x, *stats, use_batch, momentum)

    def _batch_norm(self, x, running_mean, running_var, use_batch: bool, momentum: float):
        """``normalization.batch_norm`` with this layer's parameters (SyncBatchNorm's hook)."""
        return normalization.batch_norm(x, running_mean, running_var, self.weight, self.bias,
                                        use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """PyTorch's BatchNorm1d over (N, C) or (N, C, L)."""

    DIMS, LAYOUT = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """PyTorch's BatchNorm2d over (N, C, H, W)."""

    DIMS, LAYOUT = (4,), "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """PyTorch's BatchNorm3d over (N, C, D, H, W)."""

    DIMS, LAYOUT = (5,), "(N, C, D, H, W)"
