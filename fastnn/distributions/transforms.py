"""Invertible maps with a log-Jacobian, as ``torch.distributions.transforms`` (one module
under PyTorch's name): ``Transform``, ``ExpTransform``, ``AffineTransform``,
``SigmoidTransform``, ``TanhTransform`` and ``ComposeTransform`` are defined in
``transforms_base``; ``PowerTransform``, ``SoftmaxTransform``, ``StickBreakingTransform``,
``IndependentTransform``, ``ReshapeTransform``, ... in ``transforms_more``; the matrix and
joining ones (``LowerCholeskyTransform``, ``CorrCholeskyTransform``, ``CatTransform``,
``StackTransform``, ...) in ``transforms_matrix``."""

from fastnn.distributions.transforms_base import *  # noqa: F403
from fastnn.distributions.transforms_base import __all__ as _BASE
from fastnn.distributions.transforms_matrix import *  # noqa: F403
from fastnn.distributions.transforms_matrix import __all__ as _MATRIX
from fastnn.distributions.transforms_more import *  # noqa: F403
from fastnn.distributions.transforms_more import __all__ as _MORE

__all__ = [*_BASE, *_MATRIX, *_MORE]  # noqa: PLE0604
