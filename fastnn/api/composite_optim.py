"""Composites of the optimizer steps added for AMSGrad, RMSprop's momentum and centering,
Adagrad, RAdam and NAdam: the rules of :mod:`fastnn.api.hookspec`, written with primitives.

:mod:`fastnn.api.composite` re-exports them, so the registry binds them for a backend
that lacks the fused hook.
"""

from __future__ import annotations

import math


def _decay(ops, p, g, lr, wd, decoupled):
    """(p, g) after weight decay: decoupled p *= 1 - lr wd, else g += wd p."""
    if wd and decoupled:
        return ops.mul(p, 1.0 - lr * wd), g
    if wd:
        return p, ops.add(g, ops.mul(p, wd))
    return p, g


def _moments(ops, m, v, g, beta1, beta2):
    m = ops.add(ops.mul(m, beta1), ops.mul(g, 1.0 - beta1))
    v = ops.add(ops.mul(v, beta2), ops.mul(ops.mul(g, g), 1.0 - beta2))
    return m, v


def amsgrad_step(ops, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lrs,
                 weight_decays, beta1, beta2, eps, step, decoupled):
    out = [], [], [], []
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    for p, g, m, v, vmax, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs,
                                        max_exp_avg_sqs, lrs, weight_decays):
        p, g = _decay(ops, p, g, lr, wd, decoupled)
        m, v = _moments(ops, m, v, g, beta1, beta2)
        vmax = ops.maximum(vmax, v)
        denom = ops.add(ops.sqrt(ops.div(vmax, bias2)), eps)
        p = ops.sub(p, ops.mul(ops.div(m, denom), lr / bias1))
        for lst, value in zip(out, (p, m, v, vmax)):
            lst.append(value)
    return out


def rmsprop_momentum_step(ops, params, grads, square_avgs, grad_avgs, bufs, lrs,
                          weight_decays, alpha, eps, momentum, centered):
    out = [], [], [], []
    for p, g, v, a, buf, lr, wd in zip(params, grads, square_avgs, grad_avgs, bufs, lrs,
                                       weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        v = ops.add(ops.mul(v, alpha), ops.mul(ops.mul(g, g), 1.0 - alpha))
        if centered:
            a = ops.add(ops.mul(a, alpha), ops.mul(g, 1.0 - alpha))
            denom = ops.add(ops.sqrt(ops.sub(v, ops.mul(a, a))), eps)
        else:
            denom = ops.add(ops.sqrt(v), eps)
        if momentum:
            buf = ops.add(ops.mul(buf, momentum), ops.div(g, denom))
            p = ops.sub(p, ops.mul(buf, lr))
        else:
            p = ops.sub(p, ops.mul(ops.div(g, denom), lr))
        for lst, value in zip(out, (p, v, a, buf)):
            lst.append(value)
    return out


def adagrad_step(ops, params, grads, state_sums, lrs, weight_decays, eps):
    out_p, out_s = [], []
    for p, g, s, lr, wd in zip(params, grads, state_sums, lrs, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        s = ops.add(s, ops.mul(g, g))
        out_p.append(ops.sub(p, ops.mul(ops.div(g, ops.add(ops.sqrt(s), eps)), lr)))
        out_s.append(s)
    return out_p, out_s


def radam_rectification(beta2: float, step: int) -> float | None:
    """RAdam's variance rectification r at ``step``, or None while rho <= 5 (no adaptive term)."""
    bias2 = 1.0 - beta2**step
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho = rho_inf - 2.0 * step * beta2**step / bias2
    if rho <= 5.0:
        return None
    return math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))


def radam_step(ops, params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2,
               eps, step, decoupled):
    out = [], [], []
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    rect = radam_rectification(beta2, step)
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        p, g = _decay(ops, p, g, lr, wd, decoupled)
        m, v = _moments(ops, m, v, g, beta1, beta2)
        if rect is None:
            p = ops.sub(p, ops.mul(m, lr / bias1))
        else:
            denom = ops.add(ops.sqrt(v), eps)
            p = ops.sub(p, ops.mul(ops.div(m, denom), lr * rect * math.sqrt(bias2) / bias1))
        for lst, value in zip(out, (p, m, v)):
            lst.append(value)
    return out


def nadam_step(ops, params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2,
               eps, step, mu, mu_next, mu_product, decoupled):
    out = [], [], []
    bias2 = 1.0 - beta2**step
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        p, g = _decay(ops, p, g, lr, wd, decoupled)
        m, v = _moments(ops, m, v, g, beta1, beta2)
        denom = ops.add(ops.sqrt(ops.div(v, bias2)), eps)
        p = ops.sub(p, ops.mul(ops.div(g, denom), lr * (1.0 - mu) / (1.0 - mu_product)))
        p = ops.sub(p, ops.mul(ops.div(m, denom), lr * mu_next / (1.0 - mu_product * mu_next)))
        for lst, value in zip(out, (p, m, v)):
            lst.append(value)
    return out


# ---------------------------------------------------------------- Adadelta, Adamax, ASGD, Rprop


def lerp(ops, a, b, weight: float):
    """a + weight (b - a), as PyTorch's lerp rounds it: from b's side for weight >= 0.5."""
    if weight < 0.5:
        return ops.add(a, ops.mul(ops.sub(b, a), weight))
    return ops.sub(b, ops.mul(ops.sub(b, a), 1.0 - weight))


def adadelta_step(ops, params, grads, square_avgs, acc_deltas, lrs, weight_decays, rho, eps):
    out = [], [], []
    for p, g, v, u, lr, wd in zip(params, grads, square_avgs, acc_deltas, lrs, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        v = ops.add(ops.mul(v, rho), ops.mul(ops.mul(g, g), 1.0 - rho))
        delta = ops.mul(ops.div(ops.sqrt(ops.add(u, eps)), ops.sqrt(ops.add(v, eps))), g)
        u = ops.add(ops.mul(u, rho), ops.mul(ops.mul(delta, delta), 1.0 - rho))
        p = ops.sub(p, ops.mul(delta, lr))
        for lst, value in zip(out, (p, v, u)):
            lst.append(value)
    return out


def adamax_step(ops, params, grads, exp_avgs, exp_infs, lrs, weight_decays, beta1, beta2, eps,
                step):
    out = [], [], []
    bias1 = 1.0 - beta1**step
    for p, g, m, u, lr, wd in zip(params, grads, exp_avgs, exp_infs, lrs, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        m = lerp(ops, m, g, 1.0 - beta1)
        u = ops.maximum(ops.mul(u, beta2), ops.add(ops.abs(g), eps))
        p = ops.sub(p, ops.mul(ops.div(m, u), lr / bias1))
        for lst, value in zip(out, (p, m, u)):
            lst.append(value)
    return out


def asgd_step(ops, params, grads, axs, etas, weight_decays, lambd, mu):
    out_p, out_ax = [], []
    for p, g, ax, eta, wd in zip(params, grads, axs, etas, weight_decays):
        if wd:
            g = ops.add(g, ops.mul(p, wd))
        p = ops.sub(ops.mul(p, 1.0 - lambd * eta), ops.mul(g, eta))
        # mu == 1: a copy of p (never p's own array, which a later in-place write would change)
        ax = ops.mul(p, 1.0) if mu == 1 else ops.add(ax, ops.mul(ops.sub(p, ax), mu))
        out_p.append(p)
        out_ax.append(ax)
    return out_p, out_ax


def rprop_step(ops, params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max):
    out = [], [], []
    for p, g, prev, size in zip(params, grads, prevs, step_sizes):
        sign = ops.sign(ops.mul(g, prev))
        one = ops.add(ops.mul(sign, 0.0), 1.0)  # 1, NaN where the product is NaN (as torch)
        factor = ops.where(ops.greater(sign, 0.0), ops.mul(one, etaplus),
                           ops.where(ops.less(sign, 0.0), ops.mul(one, etaminus), one))
        size = ops.minimum(ops.maximum(ops.mul(size, factor), step_size_min), step_size_max)
        g = ops.where(ops.less(sign, 0.0), ops.mul(one, 0.0), g)  # one is 1 there: an exact 0
        p = ops.sub(p, ops.mul(ops.sign(g), size))
        for lst, value in zip(out, (p, g, size)):
            lst.append(value)
    return out


def norm_dtype(arrays) -> str:
    """total_norm's dtype: float64 when any array is, else float32 (the backends and the
    core take it from here)."""
    return "float64" if any(str(a.dtype) == "float64" for a in arrays) else "float32"


def total_norm(ops, arrays, norm_type):
    """Each array's sum of |x|^p (max |x| for inf) in the result's dtype, then the root."""
    dtype, total = norm_dtype(arrays), None
    for x in arrays:
        if norm_type == math.inf and x.size == 0:
            continue  # (max over nothing: adds nothing to the max)
        x = x if str(x.dtype) == dtype else ops.astype(x, dtype)
        if norm_type == math.inf:
            part = ops.max(ops.abs(x), None, False)
        elif norm_type == 2.0:
            part = ops.sum(ops.mul(x, x), None, False)
        else:
            part = ops.sum(ops.pow(ops.abs(x), norm_type), None, False)
        if total is None:
            total = part
        else:
            total = ops.maximum(total, part) if norm_type == math.inf else ops.add(total, part)
    if total is None:  # every array size 0 under inf: the sum of nothing, 0
        return ops.sum(ops.astype(arrays[0], dtype), None, False)
    if norm_type == math.inf:
        return total
    return ops.sqrt(total) if norm_type == 2.0 else ops.pow(total, 1.0 / norm_type)


def clip_grads_with_norm(ops, grads, max_norm, total):
    """c = min(max_norm / (total + 1e-6), 1) in total's dtype, cast once per dtype."""
    shifted = ops.add(total, 1e-6)
    # max_norm as a 0-d array of total's dtype (greater(t, t) is False, NaN included)
    numerator = ops.where(ops.greater(shifted, shifted), shifted, max_norm)
    coef = ops.minimum(ops.div(numerator, shifted), 1.0)
    cast = {str(total.dtype): coef}
    out = []
    for g in grads:
        dtype = str(g.dtype)
        if dtype not in cast:
            cast[dtype] = ops.astype(coef, dtype)
        out.append(ops.mul(g, cast[dtype]))
    return out
