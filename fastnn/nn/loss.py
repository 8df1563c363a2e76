"""Loss modules, as PyTorch's: each holds the functional form's keyword arguments and
calls it as ``loss_fn(input, target)``.

They have no parameters (``weight`` and ``pos_weight`` are kept as plain tensors, not
trained), so their state_dict is empty.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.ops import losses, losses_regression


class _Loss(Module):
    FN = None
    KEYS = ("reduction",)

    def __init__(self, **kwargs):
        super().__init__()
        losses.check_reduction(type(self).__name__, kwargs.get("reduction", "mean"),
                               ("batchmean",) if type(self).__name__ == "KLDivLoss" else ())
        self.kwargs = kwargs

    def __getattr__(self, name):
        kwargs = self.__dict__.get("kwargs", {})
        if name in kwargs:
            return kwargs[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def extra_repr(self) -> str:
        return ""  # (as PyTorch's losses print: the name alone)

    def forward(self, input, target):
        return type(self).FN(input, target, **self.kwargs)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing)."""

    FN = staticmethod(losses.cross_entropy)

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)


class NLLLoss(_Loss):
    """F.nll_loss(log_probs, targets, weight, ignore_index, reduction)."""

    FN = staticmethod(losses.nll_loss)

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old PyTorch name (for (N, C, H, W) log-probabilities, which
    NLLLoss takes too)."""


class BCELoss(_Loss):
    """F.binary_cross_entropy(probs, target, weight, reduction)."""

    FN = staticmethod(losses.binary_cross_entropy)

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(weight=weight, reduction=reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits(logits, target, weight, reduction, pos_weight)."""

    FN = staticmethod(losses.binary_cross_entropy_with_logits)

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(weight=weight, reduction=reduction, pos_weight=pos_weight)


class MSELoss(_Loss):
    """F.mse_loss(pred, target, reduction)."""

    FN = staticmethod(losses_regression.mse_loss)

    def __init__(self, reduction: str = "mean"):
        super().__init__(reduction=reduction)


class L1Loss(_Loss):
    """F.l1_loss(pred, target, reduction)."""

    FN = staticmethod(losses_regression.l1_loss)

    def __init__(self, reduction: str = "mean"):
        super().__init__(reduction=reduction)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss(pred, target, reduction, beta)."""

    FN = staticmethod(losses_regression.smooth_l1_loss)

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction=reduction, beta=beta)


class HuberLoss(_Loss):
    """F.huber_loss(pred, target, reduction, delta)."""

    FN = staticmethod(losses_regression.huber_loss)

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction, delta=delta)


class KLDivLoss(_Loss):
    """F.kl_div(log_probs, target, reduction, log_target)."""

    FN = staticmethod(losses_regression.kl_div)

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction=reduction, log_target=log_target)
