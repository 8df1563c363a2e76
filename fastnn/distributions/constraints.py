"""Constraints on parameters and values, as ``torch.distributions.constraints`` (one
module under PyTorch's name): the common ones are defined in ``constraints_base``, the
matrix and functor ones (``positive_semidefinite``, ``corr_cholesky``, ``cat``,
``stack``) in ``constraints_more``."""

from fastnn.distributions.constraints_base import *  # noqa: F403
from fastnn.distributions.constraints_base import __all__ as _BASE
from fastnn.distributions.constraints_more import (
    _Cat,
    _CorrCholesky,
    _PositiveSemidefinite,
    _Stack,
)

positive_semidefinite = _PositiveSemidefinite()
"""Symmetric positive-semidefinite matrices."""
corr_cholesky = _CorrCholesky()
"""Cholesky factors of correlation matrices."""
cat = _Cat
"""``cat(cseq, dim=0, lengths=None)``: constraints on slices joined along ``dim``."""
stack = _Stack
"""``stack(cseq, dim=0)``: constraints on slices stacked along ``dim``."""

__all__ = [*_BASE, "cat", "corr_cholesky", "positive_semidefinite", "stack"]  # noqa: PLE0604
