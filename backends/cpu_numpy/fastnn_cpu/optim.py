"""The newer optimizer steps on host arrays, in place: AMSGrad, RMSprop with momentum or
centering, Adagrad, RAdam, NAdam, Adadelta, Adamax, ASGD and Rprop (the rules of fastnn's
hook specification).

Each updates the parameter and its state arrays in place with NumPy's in-place
ufuncs, so a step allocates only a few temporaries the size of one parameter.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.composite_optim import norm_dtype, radam_rectification
from fastnn.api.hookspec import hookimpl


def _decay(p, g, lr, wd, decoupled):
    if wd and decoupled:
        p *= 1.0 - lr * wd
    elif wd:
        g = g + wd * p
    return g


def _moments(m, v, g, beta1, beta2):
    m *= beta1
    m += (1.0 - beta1) * g
    v *= beta2
    v += (1.0 - beta2) * np.square(g)


@hookimpl
def amsgrad_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lrs, weight_decays,
                 beta1, beta2, eps, step, decoupled):
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    for p, g, m, v, vmax, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                                        lrs, weight_decays):
        g = _decay(p, g, lr, wd, decoupled)
        _moments(m, v, g, beta1, beta2)
        np.maximum(vmax, v, out=vmax)
        denom = np.sqrt(vmax / bias2)
        denom += eps
        p -= (lr / bias1) * m / denom
    return list(params), list(exp_avgs), list(exp_avg_sqs), list(max_exp_avg_sqs)


@hookimpl
def rmsprop_momentum_step(params, grads, square_avgs, grad_avgs, bufs, lrs, weight_decays,
                          alpha, eps, momentum, centered):
    for p, g, v, a, buf, lr, wd in zip(params, grads, square_avgs, grad_avgs, bufs, lrs,
                                       weight_decays):
        if wd:
            g = g + wd * p
        v *= alpha
        v += (1.0 - alpha) * np.square(g)
        if centered:
            a *= alpha
            a += (1.0 - alpha) * g
            denom = np.sqrt(v - np.square(a))
        else:
            denom = np.sqrt(v)
        denom += eps
        if momentum:
            buf *= momentum
            buf += g / denom
            p -= lr * buf
        else:
            p -= lr * g / denom
    return list(params), list(square_avgs), list(grad_avgs), list(bufs)


@hookimpl
def adagrad_step(params, grads, state_sums, lrs, weight_decays, eps):
    for p, g, s, lr, wd in zip(params, grads, state_sums, lrs, weight_decays):
        if wd:
            g = g + wd * p
        s += np.square(g)
        denom = np.sqrt(s)
        denom += eps
        p -= lr * g / denom
    return list(params), list(state_sums)


@hookimpl
def radam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, decoupled):
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    rect = radam_rectification(beta2, step)
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        g = _decay(p, g, lr, wd, decoupled)
        _moments(m, v, g, beta1, beta2)
        if rect is None:
            p -= (lr / bias1) * m
        else:
            denom = np.sqrt(v)
            denom += eps
            p -= (lr * rect * np.sqrt(bias2) / bias1) * m / denom
    return list(params), list(exp_avgs), list(exp_avg_sqs)


@hookimpl
def nadam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, mu, mu_next, mu_product, decoupled):
    bias2 = 1.0 - beta2**step
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        g = _decay(p, g, lr, wd, decoupled)
        _moments(m, v, g, beta1, beta2)
        denom = np.sqrt(v / bias2)
        denom += eps
        p -= (lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
        p -= (lr * mu_next / (1.0 - mu_product * mu_next)) * m / denom
    return list(params), list(exp_avgs), list(exp_avg_sqs)


# ---------------------------------------------------------------- Adadelta, Adamax, ASGD, Rprop
# Each writes its intermediates into one or two scratch arrays of the parameter's size
# (``out=``): a fresh NumPy temporary of a large parameter costs as much as the pass itself.

@hookimpl
def adadelta_step(params, grads, square_avgs, acc_deltas, lrs, weight_decays, rho, eps):
    for p, g, v, u, lr, wd in zip(params, grads, square_avgs, acc_deltas, lrs, weight_decays):
        if wd:
            g = g + wd * p
        tmp, delta = np.square(g, out=np.empty_like(p)), np.add(u, eps, out=np.empty_like(p))
        tmp *= 1.0 - rho
        v *= rho
        v += tmp
        np.sqrt(delta, out=delta)
        np.add(v, eps, out=tmp)
        np.sqrt(tmp, out=tmp)
        delta /= tmp
        delta *= g
        np.square(delta, out=tmp)
        tmp *= 1.0 - rho
        u *= rho
        u += tmp
        delta *= lr
        p -= delta
    return list(params), list(square_avgs), list(acc_deltas)


@hookimpl
def adamax_step(params, grads, exp_avgs, exp_infs, lrs, weight_decays, beta1, beta2, eps, step):
    bias1, w = 1.0 - beta1**step, 1.0 - beta1
    for p, g, m, u, lr, wd in zip(params, grads, exp_avgs, exp_infs, lrs, weight_decays):
        if wd:
            g = g + wd * p
        tmp = np.subtract(g, m, out=np.empty_like(p))
        if w < 0.5:  # PyTorch's lerp: from m's side below 0.5, from g's above
            tmp *= w
            m += tmp
        else:
            tmp *= 1.0 - w
            np.subtract(g, tmp, out=m)
        u *= beta2
        np.abs(g, out=tmp)
        tmp += eps
        np.maximum(u, tmp, out=u)
        np.divide(m, u, out=tmp)
        tmp *= lr / bias1
        p -= tmp
    return list(params), list(exp_avgs), list(exp_infs)


@hookimpl
def asgd_step(params, grads, axs, etas, weight_decays, lambd, mu):
    for p, g, ax, eta, wd in zip(params, grads, axs, etas, weight_decays):
        if wd:
            g = g + wd * p
        tmp = np.multiply(g, eta, out=np.empty_like(p))
        p *= 1.0 - lambd * eta
        p -= tmp
        if mu == 1:
            np.copyto(ax, p)
        else:
            np.subtract(p, ax, out=tmp)
            tmp *= mu
            ax += tmp
    return list(params), list(axs)


@hookimpl
def rprop_step(params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max):
    for p, g, prev, size in zip(params, grads, prevs, step_sizes):
        sign = np.multiply(g, prev, out=np.empty_like(p))
        np.sign(sign, out=sign)
        flipped = sign < 0
        np.multiply(size, etaplus, out=size, where=sign > 0)
        np.multiply(size, etaminus, out=size, where=flipped)
        np.multiply(size, sign, out=size, where=np.isnan(sign))  # NaN stays, as torch's
        np.clip(size, step_size_min, step_size_max, out=size)
        np.copyto(prev, g)
        prev[flipped] = 0
        np.sign(prev, out=sign)
        sign *= size
        p -= sign
    return list(params), list(prevs), list(step_sizes)


@hookimpl
def total_norm(arrays, norm_type):
    # one BLAS dot (or one pass) an array, in the result's dtype; the parts joined once
    dtype = np.dtype(norm_dtype(arrays)).type
    parts = []
    for x in arrays:
        if x.size == 0:
            continue
        v = x.reshape(-1)
        v = v if v.dtype == dtype else v.astype(dtype)
        if norm_type == 2.0:
            parts.append(np.dot(v, v))
        elif norm_type == np.inf:
            parts.append(np.max(np.abs(v)))
        else:
            parts.append(np.sum(np.abs(v) ** dtype(norm_type)))
    parts = np.array(parts, dtype)
    if norm_type == np.inf:
        return np.asarray(parts.max() if parts.size else dtype(0), dtype)
    total = parts.sum(dtype=dtype)
    return np.asarray(np.sqrt(total) if norm_type == 2.0 else total ** dtype(1.0 / norm_type),
                      dtype)


@hookimpl
def clip_grads_with_norm(grads, max_norm, total):
    total = np.asarray(total)
    kind = total.dtype.type
    coef = np.minimum(kind(max_norm) / (total + kind(1e-6)), kind(1.0))
    cast: dict = {}
    out = []
    for g in grads:
        c = cast.get(g.dtype)
        if c is None:
            c = cast[g.dtype] = coef.astype(g.dtype)
        out.append(g * c)
    return out
