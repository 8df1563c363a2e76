"""Helpers shared by the distributions, as ``torch.distributions.utils``: broadcasting the
parameters, probabilities to logits and back, and the lazily computed property."""

from __future__ import annotations

import numbers

import numpy as np

import fastnn as fnn
from fastnn.autograd.grad_mode import enable_grad
from fastnn.ops.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.5772156649015329
"""The Euler-Mascheroni constant (PyTorch's ``utils.euler_constant``)."""


def is_number(value) -> bool:
    """A Python (or NumPy) real number (bools too, as PyTorch's ``_Number``): a parameter
    given as one gives an empty batch shape."""
    return isinstance(value, numbers.Real) and not isinstance(value, Tensor)


def shown(value) -> str:
    """``value`` as PyTorch's f-strings show it: a 0-d tensor as its number."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return str(value.item())
    return str(value)


def broadcast_all(*values) -> tuple:
    """The arguments broadcast to one shape: numbers become tensors with the dtype and
    device of the first tensor among them (the default dtype when there is none)."""
    if not all(isinstance(v, Tensor) or is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number or fastnn.Tensor.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    options = ({"dtype": like.dtype, "device": like.device} if like is not None
               else {"dtype": fnn.get_default_dtype()})
    tensors = [v if isinstance(v, Tensor) else fnn.tensor(float(v), **options) for v in values]
    return tuple(fnn.broadcast_tensors(*tensors))


def standard_normal(shape, dtype, device) -> Tensor:
    """N(0, 1) draws from fastnn's generator (what ``fnn.manual_seed`` seeds)."""
    return fnn.randn(tuple(shape), dtype=dtype, device=device)


def standard_uniform(shape, dtype, device) -> Tensor:
    """U[0, 1) draws from fastnn's generator."""
    return fnn.rand(tuple(shape), dtype=dtype, device=device)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clamped into [eps, 1 - eps] of its dtype."""
    eps = fnn.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (binary) or log-probabilities (the last dim a set of events) of ``probs``."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from log-odds (sigmoid) or from logits over the last dim (softmax)."""
    if is_binary:
        return logits.sigmoid()
    return fnn.softmax(logits, -1)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed on first use (with gradients enabled, so that it stays on the
    tape under ``no_grad`` too) and then stored on the instance, as PyTorch's."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _tril_flat_indices(n: int, diag: int):
    """The flat (row-major) indices of the entries of an ``n x n`` matrix on or below
    diagonal ``diag``, in row order (what PyTorch's boolean tril mask selects)."""
    rows, cols = np.indices((n, n))
    return np.flatnonzero(cols < rows + (diag + 1))


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """``D x D`` lower-triangular matrices (zeros above diagonal ``diag``) filled in row
    order from the last dim of ``vec``, as PyTorch's (a gather, so gradients flow)."""
    size = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * size + 4 * abs(diag) * (diag + 1))
         ** 0.5) / 2
    if abs(round(n) - n) > fnn.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {size} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    source = np.full(n * n, size)  # the appended zero
    source[_tril_flat_indices(n, diag)] = np.arange(size)
    padded = fnn.cat([vec, fnn.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype,
                                      device=vec.device)], -1)
    index = fnn.tensor(source, dtype=fnn.int64, device=vec.device)
    return padded.index_select(-1, index).reshape(tuple(vec.shape[:-1]) + (n, n))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``D x D`` matrices on or below diagonal ``diag``, in row order, as
    vectors (PyTorch's)."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = fnn.tensor(_tril_flat_indices(n, diag), dtype=fnn.int64, device=mat.device)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,)).index_select(-1, index)
