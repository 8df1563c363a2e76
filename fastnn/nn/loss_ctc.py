"""CTCLoss, as PyTorch's: the module form of ``F.ctc_loss`` (:mod:`fastnn.ops.ctc`)."""

from __future__ import annotations

from fastnn.api.args import integer
from fastnn.nn.loss import _Loss
from fastnn.ops import ctc


class CTCLoss(_Loss):
    """Connectionist temporal classification loss; ``forward(log_probs, targets,
    input_lengths, target_lengths)`` with log_probs (T, N, C) from ``log_softmax``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(blank=integer("CTCLoss", "blank", blank, 0), reduction=reduction,
                         zero_infinity=bool(zero_infinity))

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, **self.kwargs)
