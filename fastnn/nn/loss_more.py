"""PyTorch's margin, ranking and likelihood loss modules (over :mod:`fastnn.ops.losses_more`)
and CosineEmbeddingLoss; like :mod:`fastnn.nn.loss`, each holds its functional form's
keyword arguments and has no parameters."""

from __future__ import annotations

from fastnn.nn.loss import _Loss, _WeightedLoss
from fastnn.ops import ctc, losses_regression
from fastnn.ops import losses_more as L


class _PairLoss(_Loss):
    """A loss of a pair and its target: ``loss(input1, input2, target)``, PyTorch's names."""

    def forward(self, input1, input2, target):
        return type(self).FN(input1, input2, target, **self.arguments())


class _TripletLoss(_Loss):
    """A loss of a triplet: ``loss(anchor, positive, negative)``, PyTorch's names."""

    def forward(self, anchor, positive, negative):
        return type(self).FN(anchor, positive, negative, **self.arguments())


class MarginRankingLoss(_PairLoss):
    """F.margin_ranking_loss(input1, input2, target, margin, reduction)."""

    FN = staticmethod(L.margin_ranking_loss)

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction, margin=margin)


class TripletMarginLoss(_TripletLoss):
    """F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)."""

    FN = staticmethod(L.triplet_margin_loss)

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction, margin=margin, p=p, eps=eps,
                         swap=swap)


class CosineEmbeddingLoss(_PairLoss):
    """F.cosine_embedding_loss(input1, input2, target, margin, reduction)."""

    FN = staticmethod(losses_regression.cosine_embedding_loss)

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction, margin=margin)


class SoftMarginLoss(_Loss):
    """F.soft_margin_loss(input, target, reduction)."""

    FN = staticmethod(L.soft_margin_loss)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """F.multilabel_soft_margin_loss(input, target, weight, reduction)."""

    FN = staticmethod(L.multilabel_soft_margin_loss)

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)


class MultiLabelMarginLoss(_Loss):
    """F.multilabel_margin_loss(input, target, reduction)."""

    FN = staticmethod(L.multilabel_margin_loss)

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)


class HingeEmbeddingLoss(_Loss):
    """F.hinge_embedding_loss(input, target, margin, reduction)."""

    FN = staticmethod(L.hinge_embedding_loss)

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction, margin=margin)


class PoissonNLLLoss(_Loss):
    """F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=reduction)."""

    FN = staticmethod(L.poisson_nll_loss)

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction, log_input=log_input, full=full,
                         eps=eps)

    def forward(self, log_input, target):
        return L.poisson_nll_loss(log_input, target, **self.arguments())


class GaussianNLLLoss(_Loss):
    """F.gaussian_nll_loss(input, target, var, full, eps, reduction): ``loss(input, target,
    var)``."""

    FN = staticmethod(L.gaussian_nll_loss)

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(full=full, eps=eps, reduction=reduction)

    def forward(self, input, target, var):
        return L.gaussian_nll_loss(input, target, var, **self.arguments())


class MultiMarginLoss(_WeightedLoss):
    """F.multi_margin_loss(input, target, p, margin, weight, reduction)."""

    FN = staticmethod(L.multi_margin_loss)

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction, p=p, margin=margin)


class TripletMarginWithDistanceLoss(_TripletLoss):
    """F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function,
    margin, swap, reduction)."""

    FN = staticmethod(L.triplet_margin_with_distance_loss)

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(distance_function=distance_function, margin=margin, swap=swap,
                         reduction=reduction)


class CTCLoss(_Loss):
    """F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
    zero_infinity): ``loss(log_probs, targets, input_lengths, target_lengths)``."""

    FN = staticmethod(ctc.ctc_loss)

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(blank=blank, reduction=reduction, zero_infinity=zero_infinity)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, **self.kwargs)
