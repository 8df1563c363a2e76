"""Fused optimizer steps (``kernels/optim.cl``): one in-place kernel per parameter, for
every rule (SGD, RMSprop with or without momentum and centering, Adam/AdamW with or
without amsgrad, Adagrad, RAdam, NAdam, Adadelta, Adamax, ASGD, Rprop).

Parameters and optimizer state are updated in place when they are plain
contiguous arrays (as parameters and their state always are in practice); a
view is first copied, and the copy is what the hook returns.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.composite_optim import radam_rectification
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, misc
from fastnn_opencl.misc import fill
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, rounded

FILE = "optim.cl"
_I = np.int32


def _owned(x: CLArray) -> CLArray:
    """``x`` if it can be updated in place (contiguous, offset 0), else a copy."""
    return x if x.is_contiguous and x.offset == 0 else elementwise.copy(x)



def _kernel(p: CLArray, name: str, n_buffers: int, n_scalars: int, n_flags: int):
    """Kernel args: p, grad, grad offset, state buffers, n, scalars of p's type, int flags."""
    t = NP_TYPES[p.dtype]
    arg_dtypes = [None, None, _I] + [None] * n_buffers + [_I] + [t] * n_scalars + [_I] * n_flags
    return p.dev.kernel(FILE, name, (("T", CL_TYPES[p.dtype]),), arg_dtypes)


def _sgd_scalars(p, lr, wd, momentum, dampening, nesterov, first) -> tuple:
    """k_sgd's scalar arguments (from position 5) as the kernel is given them."""
    t = NP_TYPES[p.dtype].type
    return (t(lr), t(wd), t(momentum), t(dampening), _I(int(nesterov)), _I(int(first)))


def _adam_scalars(p, lr, wd, beta1, beta2, eps, bias1, bias2, decoupled) -> tuple:
    """k_adam's scalar arguments (from position 6) as the kernel is given them."""
    t = NP_TYPES[p.dtype].type
    return (t(lr), t(wd), t(beta1), t(beta2), t(eps), t(bias1), t(bias2),
            _I(int(decoupled)))


def _floats(p, *values) -> tuple:
    """``values`` as p's scalar type (as the kernel is given them)."""
    t = NP_TYPES[p.dtype].type
    return tuple(t(v) for v in values)


def _bias(beta1, beta2, step) -> tuple[float, float]:
    return 1.0 - beta1**step, 1.0 - beta2**step


@hookimpl
def sgd_step(params, grads, bufs, lrs, weight_decays, momentum, dampening, nesterov, first_step):
    new_params, new_bufs = [], []
    for p, g, buf, lr, wd in zip(params, grads, bufs, lrs, weight_decays):
        p, g = _owned(p), misc.contiguous(g)
        first = first_step or buf is None
        if momentum:
            buf = p.dev.empty(p.shape, p.dtype) if first else _owned(buf)
        if p.size:
            kernel = _kernel(p, "k_sgd", 1, 4, 2)
            kernel(p.dev.queue, (rounded(p.size),), None, p.data, g.data, g.offset,
                   (buf if momentum else p).data, p.size,
                   *_sgd_scalars(p, lr, wd, momentum, dampening, nesterov, first))
        new_params.append(p)
        new_bufs.append(buf)
    return new_params, new_bufs


@hookimpl
def adam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
              step, decoupled):
    bias1, bias2 = _bias(beta1, beta2, step)
    out_p, out_m, out_v = [], [], []
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        p, g, m, v = _owned(p), misc.contiguous(g), _owned(m), _owned(v)
        if p.size:
            kernel = _kernel(p, "k_adam", 2, 7, 1)
            kernel(p.dev.queue, (rounded(p.size),), None, p.data, g.data, g.offset, m.data,
                   v.data, p.size,
                   *_adam_scalars(p, lr, wd, beta1, beta2, eps, bias1, bias2, decoupled))
        out_p.append(p)
        out_m.append(m)
        out_v.append(v)
    return out_p, out_m, out_v


# ---------------------------------------------------------------- in a launch list

def _sgd_replay(args):
    """For the launch list (:mod:`fastnn_opencl.launch_list`): the traced call's args ->
    (the kernel launched, the first scalar position, scalars(*args) -> each launch's
    scalar arguments), or None where the call cannot replay so."""
    params, bufs, first_step = args[0], args[2], args[8]
    launched = [(k, p, first_step or buf is None)
                for k, (p, buf) in enumerate(zip(params, bufs)) if p.size]

    def scalars(_p, _g, _b, lrs, wds, momentum, dampening, nesterov, _first):
        return [_sgd_scalars(p, lrs[k], wds[k], momentum, dampening, nesterov, first)
                for k, p, first in launched]
    return "k_sgd", 5, scalars


def _adam_replay(args):
    launched = [(k, p) for k, p in enumerate(args[0]) if p.size]

    def scalars(_p, _g, _m, _v, lrs, wds, beta1, beta2, eps, step, decoupled):
        bias1, bias2 = _bias(beta1, beta2, step)
        return [_adam_scalars(p, lrs[k], wds[k], beta1, beta2, eps, bias1, bias2, decoupled)
                for k, p in launched]
    return "k_adam", 6, scalars


def _amsgrad_replay(args):
    launched = [(k, p) for k, p in enumerate(args[0]) if p.size]

    def scalars(_p, _g, _m, _v, _vmax, lrs, wds, beta1, beta2, eps, step, decoupled):
        bias1, bias2 = _bias(beta1, beta2, step)
        flag = _I(int(decoupled))
        return [_floats(p, lrs[k], wds[k], beta1, beta2, eps, bias1, bias2) + (flag,)
                for k, p in launched]
    return "k_amsgrad", 7, scalars


def _rmsprop_replay(args):
    if any(v is None for v in args[2]):
        return None  # the first step fills its state: a hook call
    launched = [(k, p) for k, p in enumerate(args[0]) if p.size]

    def scalars(_p, _g, _v, lrs, wds, alpha, eps):
        return [_floats(p, lrs[k], wds[k], alpha, eps) for k, p in launched]
    return "k_rmsprop", 5, scalars


REPLAYS = {"sgd_step": _sgd_replay, "adam_step": _adam_replay,
           "amsgrad_step": _amsgrad_replay, "rmsprop_step": _rmsprop_replay}
"""Optimizer hooks a launch list replays with their launches (one kernel per parameter of
nonzero size, in order): the numbers that change between steps (learning rates, weight
decays, the step count) are the call's arguments at each replay, from which these give
each launch's scalar arguments, set where they changed."""


@hookimpl
def rmsprop_step(params, grads, square_avgs, lrs, weight_decays, alpha, eps):
    out_p, out_v = [], []
    for p, g, v, lr, wd in zip(params, grads, square_avgs, lrs, weight_decays):
        p, g = _owned(p), misc.contiguous(g)
        v = fill(p.shape, 0, p.dtype, p.dev) if v is None else _owned(v)
        if p.size:
            kernel = _kernel(p, "k_rmsprop", 1, 4, 0)
            kernel(p.dev.queue, (rounded(p.size),), None, p.data, g.data, g.offset, v.data,
                   p.size, *_floats(p, lr, wd, alpha, eps))
        out_p.append(p)
        out_v.append(v)
    return out_p, out_v


# ---------------------------------------------------------------- the newer rules

def _launch(p, name, buffers, scalars, flags, g):
    """One in-place kernel over ``p``: (p, grad, grad offset, buffers, n, scalars, flags)."""
    if p.size:
        kernel = _kernel(p, name, len(buffers), len(scalars), len(flags))
        kernel(p.dev.queue, (rounded(p.size),), None, p.data, g.data, g.offset,
               *[b.data for b in buffers], p.size, *scalars, *[int(f) for f in flags])


@hookimpl
def amsgrad_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lrs, weight_decays,
                 beta1, beta2, eps, step, decoupled):
    bias1, bias2 = _bias(beta1, beta2, step)
    out = [], [], [], []
    for p, g, m, v, vmax, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                                        lrs, weight_decays):
        p, g, m, v, vmax = _owned(p), misc.contiguous(g), _owned(m), _owned(v), _owned(vmax)
        _launch(p, "k_amsgrad", (m, v, vmax),
                _floats(p, lr, wd, beta1, beta2, eps, bias1, bias2), (decoupled,), g)
        for lst, value in zip(out, (p, m, v, vmax)):
            lst.append(value)
    return out


@hookimpl
def rmsprop_momentum_step(params, grads, square_avgs, grad_avgs, bufs, lrs, weight_decays,
                          alpha, eps, momentum, centered):
    out = [], [], [], []
    for p, g, v, a, buf, lr, wd in zip(params, grads, square_avgs, grad_avgs, bufs, lrs,
                                       weight_decays):
        p, g, v = _owned(p), misc.contiguous(g), _owned(v)
        a = _owned(a) if centered else None
        buf = _owned(buf) if momentum else None
        # an unused state slot gets v, which the kernel then never reads through it
        _launch(p, "k_rmsprop_momentum", (v, a or v, buf or v),
                (lr, wd, alpha, eps, momentum), (centered,), g)
        for lst, value in zip(out, (p, v, a, buf)):
            lst.append(value)
    return out


@hookimpl
def adagrad_step(params, grads, state_sums, lrs, weight_decays, eps):
    out_p, out_s = [], []
    for p, g, s, lr, wd in zip(params, grads, state_sums, lrs, weight_decays):
        p, g, s = _owned(p), misc.contiguous(g), _owned(s)
        _launch(p, "k_adagrad", (s,), (lr, wd, eps), (), g)
        out_p.append(p)
        out_s.append(s)
    return out_p, out_s


@hookimpl
def radam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, decoupled):
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    rect = radam_rectification(beta2, step)
    out = [], [], []
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        p, g, m, v = _owned(p), misc.contiguous(g), _owned(m), _owned(v)
        adaptive = 0.0 if rect is None else lr * rect * math.sqrt(bias2) / bias1
        _launch(p, "k_radam", (m, v), (lr, wd, beta1, beta2, eps, lr / bias1, adaptive),
                (rect is not None, decoupled), g)
        for lst, value in zip(out, (p, m, v)):
            lst.append(value)
    return out


@hookimpl
def nadam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, mu, mu_next, mu_product, decoupled):
    bias2 = 1.0 - beta2**step
    out = [], [], []
    for p, g, m, v, lr, wd in zip(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays):
        p, g, m, v = _owned(p), misc.contiguous(g), _owned(m), _owned(v)
        coef_g = lr * (1.0 - mu) / (1.0 - mu_product)
        coef_m = lr * mu_next / (1.0 - mu_product * mu_next)
        _launch(p, "k_nadam", (m, v), (lr, wd, beta1, beta2, eps, bias2, coef_g, coef_m),
                (decoupled,), g)
        for lst, value in zip(out, (p, m, v)):
            lst.append(value)
    return out


# ---------------------------------------------------------------- Adadelta, Adamax, ASGD, Rprop

@hookimpl
def adadelta_step(params, grads, square_avgs, acc_deltas, lrs, weight_decays, rho, eps):
    out = [], [], []
    for p, g, v, u, lr, wd in zip(params, grads, square_avgs, acc_deltas, lrs, weight_decays):
        p, g, v, u = _owned(p), misc.contiguous(g), _owned(v), _owned(u)
        _launch(p, "k_adadelta", (v, u), (lr, wd, rho, eps), (), g)
        for lst, value in zip(out, (p, v, u)):
            lst.append(value)
    return out


@hookimpl
def adamax_step(params, grads, exp_avgs, exp_infs, lrs, weight_decays, beta1, beta2, eps, step):
    bias1 = 1.0 - beta1**step
    out = [], [], []
    for p, g, m, u, lr, wd in zip(params, grads, exp_avgs, exp_infs, lrs, weight_decays):
        p, g, m, u = _owned(p), misc.contiguous(g), _owned(m), _owned(u)
        _launch(p, "k_adamax", (m, u), (lr, wd, 1.0 - beta1, beta2, eps, lr / bias1), (), g)
        for lst, value in zip(out, (p, m, u)):
            lst.append(value)
    return out


@hookimpl
def asgd_step(params, grads, axs, etas, weight_decays, lambd, mu):
    out_p, out_ax = [], []
    for p, g, ax, eta, wd in zip(params, grads, axs, etas, weight_decays):
        p, g, ax = _owned(p), misc.contiguous(g), _owned(ax)
        _launch(p, "k_asgd", (ax,), (eta, wd, lambd, mu), (mu == 1,), g)
        out_p.append(p)
        out_ax.append(ax)
    return out_p, out_ax


@hookimpl
def rprop_step(params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max):
    out = [], [], []
    for p, g, prev, size in zip(params, grads, prevs, step_sizes):
        p, g, prev, size = _owned(p), misc.contiguous(g), _owned(prev), _owned(size)
        _launch(p, "k_rprop", (prev, size), (etaminus, etaplus, step_size_min, step_size_max),
                (), g)
        for lst, value in zip(out, (p, prev, size)):
            lst.append(value)
    return out
