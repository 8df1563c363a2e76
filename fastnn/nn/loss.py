"""Loss modules, as PyTorch's: each holds the functional form's keyword arguments and
calls it as ``loss_fn(input, target)``.

They have no parameters. The per-class ``weight`` (and BCEWithLogitsLoss's
``pos_weight``) is a buffer, as in PyTorch's ``_WeightedLoss``: in ``state_dict()`` where
given, and moved by ``.to(device)``. ``_Loss`` and ``_WeightedLoss`` take PyTorch's
arguments (``size_average``, ``reduce``, ``reduction``), so custom losses that subclass
them run as written.
"""

from __future__ import annotations

from fastnn.nn.module import Module
from fastnn.ops import losses, losses_regression


class _Loss(Module):
    """The base of the loss modules (PyTorch's ``nn.modules.loss._Loss``): keeps
    ``reduction`` and the functional form's other keyword arguments; tensors named in
    ``BUFFERS`` are kept as buffers."""

    FN = None
    BUFFERS = ()

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", **kwargs):
        super().__init__()
        reduction = losses.reduction_of(type(self).__name__, size_average, reduce, reduction)
        losses.check_reduction(type(self).__name__, reduction,
                               ("batchmean",) if type(self).__name__ == "KLDivLoss" else ())
        for name in self.BUFFERS:
            self.register_buffer(name, kwargs.pop(name, None))
        self.kwargs = {**kwargs, "reduction": reduction}

    def __getattr__(self, name):
        kwargs = self.__dict__.get("kwargs", {})
        if name in kwargs:
            return kwargs[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        kwargs = self.__dict__.get("kwargs")
        if kwargs is not None and name in kwargs:  # (loss.reduction = "sum", as PyTorch's)
            kwargs[name] = value
            return
        super().__setattr__(name, value)

    def arguments(self) -> dict:
        """The functional form's keyword arguments, the buffers' current tensors among them."""
        if not self.BUFFERS:
            return self.kwargs
        return {**self.kwargs, **{name: getattr(self, name) for name in self.BUFFERS}}

    def extra_repr(self) -> str:
        return ""  # (as PyTorch's losses print: the name alone)

    def forward(self, input, target):
        return type(self).FN(input, target, **self.arguments())


class _WeightedLoss(_Loss):
    """A loss with a per-class ``weight`` buffer (PyTorch's ``nn.modules.loss._WeightedLoss``)."""

    BUFFERS = ("weight",)

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 **kwargs):
        super().__init__(size_average, reduce, reduction, weight=weight, **kwargs)


class CrossEntropyLoss(_WeightedLoss):
    """F.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing)."""

    FN = staticmethod(losses.cross_entropy)

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


class NLLLoss(_WeightedLoss):
    """F.nll_loss(log_probs, targets, weight, ignore_index, reduction)."""

    FN = staticmethod(losses.nll_loss)

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction, ignore_index=ignore_index)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old PyTorch name (for (N, C, H, W) log-probabilities, which
    NLLLoss takes too)."""


class BCELoss(_WeightedLoss):
    """F.binary_cross_entropy(probs, target, weight, reduction)."""

    FN = staticmethod(losses.binary_cross_entropy)

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits(logits, target, weight, reduction, pos_weight)."""

    FN = staticmethod(losses.binary_cross_entropy_with_logits)
    BUFFERS = ("weight", "pos_weight")

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction, weight=weight, pos_weight=pos_weight)


class MSELoss(_Loss):
    """F.mse_loss(pred, target, reduction)."""

    FN = staticmethod(losses_regression.mse_loss)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)


class L1Loss(_Loss):
    """F.l1_loss(pred, target, reduction)."""

    FN = staticmethod(losses_regression.l1_loss)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss(pred, target, reduction, beta)."""

    FN = staticmethod(losses_regression.smooth_l1_loss)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction, beta=beta)


class HuberLoss(_Loss):
    """F.huber_loss(pred, target, reduction, delta)."""

    FN = staticmethod(losses_regression.huber_loss)

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction, delta=delta)


class KLDivLoss(_Loss):
    """F.kl_div(log_probs, target, reduction, log_target)."""

    FN = staticmethod(losses_regression.kl_div)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction, log_target=log_target)
