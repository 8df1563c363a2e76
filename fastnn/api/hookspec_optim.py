"""The optional optimizer-step hooks (``@op``) added with Adadelta, Adamax, ASGD and Rprop.

Kept beside :mod:`fastnn.api.hookspec_ops` (the older steps) so that each spec module stays
small; :mod:`fastnn.api.hookspec` takes these into its namespace as it takes those. Each has a
composite of the same name in :mod:`fastnn.api.composite_optim`. A ``maximize=True``
optimizer negates the gradients before calling a hook, so the hooks always descend.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastnn.api.spec_marks import op


@op
def adadelta_step(
    params: list,
    grads: list,
    square_avgs: list,
    acc_deltas: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    rho: float,
    eps: float,
) -> tuple[list, list, list]:
    """One Adadelta step, PyTorch's rule: g = grad + wd * p; v = rho*v + (1-rho)*g*g;
    delta = sqrt(u + eps) / sqrt(v + eps) * g; u = rho*u + (1-rho)*delta*delta;
    p = p - lr * delta. Returns the new (params, square_avgs, acc_deltas); may update in place.
    """


@op
def adamax_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_infs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
) -> tuple[list, list, list]:
    """One Adamax step, PyTorch's rule: g = grad + wd * p; m = m + (1-b1)*(g - m);
    u = max(b2*u, |g| + eps); p = p - lr / (1 - b1**step) * m / u.
    Returns the new (params, exp_avgs, exp_infs); may update in place.
    """


@op
def asgd_step(
    params: list,
    grads: list,
    axs: list,
    etas: Sequence[float],
    weight_decays: Sequence[float],
    lambd: float,
    mu: float,
) -> tuple[list, list]:
    """One ASGD step, PyTorch's rule, with each parameter's current eta (its step size):
    g = grad + wd * p; p = p * (1 - lambd*eta) - eta * g; then the average
    ax = p where mu == 1, else ax + mu * (p - ax). Returns the new (params, axs).
    """


@op
def rprop_step(
    params: list,
    grads: list,
    prevs: list,
    step_sizes: list,
    etaminus: float,
    etaplus: float,
    step_size_min: float,
    step_size_max: float,
) -> tuple[list, list, list]:
    """One Rprop step, PyTorch's rule: s = sign(grad * prev); the step size is multiplied by
    etaplus where s > 0, etaminus where s < 0 (1 where 0) and clamped to [min, max]; where
    s < 0 the gradient counts as 0; p = p - sign(g) * step_size; prev = g.
    Returns the new (params, prevs, step_sizes); may update in place.
    """
