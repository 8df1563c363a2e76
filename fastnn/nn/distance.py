"""CosineSimilarity and PairwiseDistance, PyTorch's two-input distance layers (no
parameters), over :func:`fastnn.functional.cosine_similarity` and
:func:`~fastnn.ops.distance.pairwise_distance`."""

from __future__ import annotations

from fastnn.api.args import flag, nonnegative, real
from fastnn.nn.module import Module
from fastnn.ops import distance
from fastnn.ops.losses_regression import cosine_similarity


class _TwoInputs(Module):
    def reverse(self, x, grad_out):
        """Not defined: ``reverse(x, grad_out)`` is the protocol of one-input layers."""
        raise TypeError(f"{type(self).__name__}.reverse: a layer of two inputs has no "
                        f"reverse(x, grad_out); differentiate it on the tape "
                        f"(out.backward()) instead")


class CosineSimilarity(_TwoInputs):
    """sum(x1 x2, dim) / (max(||x1||, eps) max(||x2||, eps)), as PyTorch's."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, nonnegative("CosineSimilarity", "eps", eps)

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(_TwoInputs):
    """||x1 - x2 + eps||_p over the last dim, as PyTorch's."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = real("PairwiseDistance", "p", p)
        self.eps = real("PairwiseDistance", "eps", eps)
        self.keepdim = flag("PairwiseDistance", "keepdim", keepdim)

    def forward(self, x1, x2):
        return distance.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
