"""The optional optimizer-step hooks (``@op``): one fused update of every parameter of a
group per hook.

Kept beside :mod:`fastnn.api.hookspec_ops` so that each spec module stays small;
:mod:`fastnn.api.hookspec` takes these into its namespace as it takes those. Each has a
composite of the same name in :mod:`fastnn.api.composite` (the newer ones in
:mod:`fastnn.api.composite_optim`). A ``maximize=True``
optimizer negates the gradients before calling a hook, so the hooks always descend.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastnn.api.spec_marks import Array, op


@op
def sgd_step(
    params: list,
    grads: list,
    bufs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    momentum: float,
    dampening: float,
    nesterov: bool,
    first_step: bool,
) -> tuple[list, list]:
    """One SGD step for many parameters (PyTorch's rule).

    g = grad + wd * p; with momentum: buf = g on the first step, else
    momentum * buf + (1 - dampening) * g; g = g + momentum * buf if nesterov
    else buf. p = p - lr * g. ``bufs`` holds None when momentum == 0.
    Returns the new (params, bufs); may update the arrays in place.
    """


@op
def adam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One Adam (``decoupled=False``) or AdamW step, PyTorch's rule.

    Adam adds wd * p to the gradient; AdamW multiplies p by (1 - lr * wd).
    m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
    p = p - lr * (m / (1 - b1**step)) / (sqrt(v / (1 - b2**step)) + eps).
    Returns the new (params, exp_avgs, exp_avg_sqs); may update in place.
    """


@op
def rmsprop_step(
    params: list,
    grads: list,
    square_avgs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    alpha: float,
    eps: float,
) -> tuple[list, list]:
    """v = alpha*v + (1-alpha)*g*g; p = p - lr * g / (sqrt(v) + eps).

    g includes wd * p. Returns the new (params, square_avgs); may update in place.
    """


@op
def amsgrad_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    max_exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list, list]:
    """One Adam or AdamW step with ``amsgrad=True``, PyTorch's rule.

    As ``adam_step`` (weight decay, m, v), then vmax = max(vmax, v) and
    p = p - lr * (m / (1 - b1**step)) / (sqrt(vmax / (1 - b2**step)) + eps).
    Returns the new (params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs); may update in place.
    """


@op
def rmsprop_momentum_step(
    params: list,
    grads: list,
    square_avgs: list,
    grad_avgs: list,
    bufs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    alpha: float,
    eps: float,
    momentum: float,
    centered: bool,
) -> tuple[list, list, list, list]:
    """RMSprop with momentum and/or ``centered``, PyTorch's rule (g includes wd * p).

    v = alpha*v + (1-alpha)*g*g; centered: a = alpha*a + (1-alpha)*g and
    d = sqrt(v - a*a) + eps, else d = sqrt(v) + eps. momentum > 0:
    buf = momentum*buf + g/d, p = p - lr*buf; else p = p - lr*g/d. ``grad_avgs``
    holds None unless centered, ``bufs`` None when momentum == 0 (and their
    results are then None too). Returns the new (params, square_avgs, grad_avgs, bufs).
    """


@op
def adagrad_step(
    params: list,
    grads: list,
    state_sums: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    eps: float,
) -> tuple[list, list]:
    """g = grad + wd * p; s = s + g*g; p = p - lr * g / (sqrt(s) + eps).

    ``lrs`` already hold PyTorch's decayed rate lr / (1 + (step - 1) * lr_decay).
    Returns the new (params, state_sums); may update in place.
    """


@op
def radam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One RAdam step, PyTorch's rule (weight decay as ``adam_step``).

    m and v as Adam; rho_inf = 2/(1-b2) - 1, rho = rho_inf - 2 step b2**step / (1 - b2**step).
    rho > 5: r = sqrt((rho-4)(rho-2) rho_inf / ((rho_inf-4)(rho_inf-2) rho)) and
    p = p - lr * r * (m / (1 - b1**step)) * sqrt(1 - b2**step) / (sqrt(v) + eps);
    else p = p - lr * m / (1 - b1**step). Returns the new (params, exp_avgs, exp_avg_sqs).
    """


@op
def nadam_step(
    params: list,
    grads: list,
    exp_avgs: list,
    exp_avg_sqs: list,
    lrs: Sequence[float],
    weight_decays: Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    mu: float,
    mu_next: float,
    mu_product: float,
    decoupled: bool,
) -> tuple[list, list, list]:
    """One NAdam step, PyTorch's rule (weight decay as ``adam_step``).

    m and v as Adam; d = sqrt(v / (1 - b2**step)) + eps;
    p = p - lr (1 - mu) / (1 - mu_product) * g / d - lr mu_next / (1 - mu_product mu_next) * m / d,
    where ``mu_product`` is the product of mu over every step so far, this one's included.
    Returns the new (params, exp_avgs, exp_avg_sqs).
    """


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


@op
def total_norm(arrays: list, norm_type: float) -> Array:
    """The ``norm_type``-norm of all the values of ``arrays`` (one device's, any shapes
    and layouts, at least one) taken as one vector, as PyTorch's ``get_total_norm``:
    (sum |x|^p)^(1/p) for p > 0 (a finite float), max |x| for ``inf`` (a size-0 array adds
    nothing; all of them size 0: 0). A 0-d array, float64 when any array is float64,
    else float32 (float16 and bfloat16 values summed in float32). NaN anywhere gives NaN.
    One hook where its composite makes three calls an array.
    """


@op
def clip_grads_with_norm(grads: list, max_norm: float, total: Array) -> list:
    """Each of ``grads`` times c = min(max_norm / (total + 1e-6), 1), as PyTorch's
    ``clip_grads_with_norm_``: ``total`` a 0-d float array (:func:`total_norm`'s), c
    computed in its dtype, then cast to each array's dtype (as an in-place multiply by a
    0-d tensor); a NaN total makes every value NaN, an infinite one zeros (NaN where a
    value is infinite). Returns new arrays of the same shapes and dtypes, in order; nothing
    waits for the device. One hook where its composite makes one call an array.
    """
