"""LinearCrossEntropyLoss, as PyTorch 2.13's: a loss with parameters, the linear head
(``self.linear``, a Linear of ``num_classes * prod(out_features)`` outputs) whose logits go
to the cross-entropy (:func:`fastnn.ops.linear_cross_entropy.linear_cross_entropy`), made
whole or chunk by chunk as ``options`` says."""

from __future__ import annotations

import math

from fastnn.nn.linear import Linear
from fastnn.nn.loss import _WeightedLoss
from fastnn.ops.linear_cross_entropy import LinearCrossEntropyOptions, linear_cross_entropy

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """F.linear_cross_entropy(input, linear.weight, target, linear_bias=linear.bias, ...)
    with ``linear.weight`` seen as (num_classes, *out_features, in_features); ``linear``
    starts as ``nn.Linear``'s (state_dict keys ``linear.weight``, ``linear.bias``)."""

    FN = staticmethod(linear_cross_entropy)

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean",
                 weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"LinearCrossEntropyLoss: expected weight shape to be "
                               f"{(num_classes,)}, got {tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"LinearCrossEntropyLoss: expected label_smoothing to be in "
                               f"range [0, 1], got {label_smoothing}")
        super().__init__(weight, None, None, reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing, options=options)
        self.num_classes = num_classes
        self.out_features = out_features
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        weight = self.linear.weight.reshape(*shape, self.linear.in_features)
        bias = None if self.linear.bias is None else self.linear.bias.reshape(*shape)
        return linear_cross_entropy(input, weight, target, linear_bias=bias,
                                    **self.arguments())

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
