"""Build the same distribution in fastnn and in torch from NumPy parameters, as leaves
that require grad, and compare values and gradients."""

from __future__ import annotations

import numpy as np

import fastnn as fnn
import fastnn.distributions as fd

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-10)}


def leaves(torch, params: dict, grad=True):
    """(fastnn tensors, torch tensors) for a dict of NumPy arrays; float ones require
    grad when ``grad``."""
    ours, theirs = {}, {}
    for name, value in params.items():
        value = np.asarray(value)
        floating = np.issubdtype(value.dtype, np.floating)
        ours[name] = fnn.tensor(value, requires_grad=grad and floating)
        theirs[name] = torch.tensor(value, requires_grad=grad and floating)
    return ours, theirs


def pair(torch, name: str, params: dict, grad=True, **options):
    """(fastnn distribution, torch distribution, fastnn leaves, torch leaves)."""
    ours, theirs = leaves(torch, params, grad)
    return (getattr(fd, name)(**ours, **options),
            getattr(torch.distributions, name)(**theirs, **options), ours, theirs)


def close(ours, theirs, dtype=np.float64, **tol):
    """``ours`` (a fastnn tensor) equals ``theirs`` (a torch tensor) in shape and value."""
    mine = ours.detach().numpy()
    other = theirs.detach().numpy()
    assert mine.shape == other.shape, (mine.shape, other.shape)
    np.testing.assert_allclose(mine, other, **(tol or TOL[dtype]))


def grads_close(ours: dict, theirs: dict, dtype=np.float64, **tol):
    """The .grad of every leaf that requires grad agrees (within ``tol`` if given)."""
    for name, leaf in ours.items():
        if leaf.requires_grad:
            assert leaf.grad is not None, f"no gradient reached {name}"
            close(leaf.grad, theirs[name].grad, dtype, **tol)
