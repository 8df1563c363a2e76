"""The constraints of ``torch.distributions.constraints`` for correlation Cholesky factors,
positive-semidefinite matrices and slices (``corr_cholesky``, ``positive_semidefinite``,
``cat``, ``stack``); :mod:`fastnn.distributions.constraints` exports them."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
from fastnn.distributions.constraints_base import Constraint, _LowerCholesky, _Symmetric

__all__: list = []


class _PositiveSemidefinite(_Symmetric):
    """Symmetric positive-semidefinite matrices (the eigenvalues are found on the host)."""

    def check(self, value):
        symmetric = super().check(value)
        if not bool(symmetric.all().item()):
            return symmetric
        lowest = np.linalg.eigvalsh(np.asarray(value.detach().numpy(), np.float64))
        return fnn.tensor((lowest >= 0).all(-1), device=value.device)


class _CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower-triangular, a positive diagonal,
    and rows of unit Euclidean norm (within ``10 n eps`` of the dtype)."""

    event_dim = 2

    def check(self, value):
        tol = fnn.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = fnn.linalg.norm(value.detach(), dim=-1)
        unit_row_norm = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_row_norm


def _check_dim(dim, value):
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for value with {value.dim()} dimensions")


class _Cat(Constraint):
    """The constraints of ``cseq`` on consecutive slices of ``lengths`` (1 each by
    default) along ``dim``, as ``fnn.cat`` joins them."""

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq "
                                 f"({len(self.cseq)})")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        _check_dim(self.dim, value)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start = start + length
        return fnn.cat(checks, self.dim)


class _Stack(Constraint):
    """The constraints of ``cseq`` on the slices of ``value`` along ``dim``, as
    ``fnn.stack`` joins them."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        _check_dim(self.dim, value)
        slices = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return fnn.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)
