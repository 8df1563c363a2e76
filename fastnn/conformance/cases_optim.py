"""Conformance cases of the newer fused optimizer steps: AMSGrad, RMSprop with momentum or
centering, Adagrad, RAdam, NAdam, Adadelta, Adamax, ASGD and Rprop.

Custom cases, as the older steps in :mod:`fastnn.conformance.cases_io`: each calls
``device.ops.<hook>`` with three parameters of different shapes and learning rates and
compares every returned array with the NumPy rule of the hook's docstring.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.conformance.case import Case, register
from fastnn.conformance.cases_io import LRS, SHAPES, WDS, _compare_step, _state
from fastnn.conformance.compare import GRADIENT


def _put(device, dtype):
    return lambda arrays: [device.ops.from_numpy(a.astype(dtype), device.index) for a in arrays]


def _decayed(p, g, lr, wd, decoupled):
    return (p * (1 - lr * wd), g) if decoupled else (p, g + wd * p)


def _check_amsgrad(device, dtype, rng):
    put = _put(device, dtype)
    for step, decoupled in [(1, False), (4, True)]:
        p, g, m = _state(rng), _state(rng), _state(rng)
        v, vmax = _state(rng, positive=True), _state(rng, positive=True)
        got = device.ops.amsgrad_step(put(p), put(g), put(m), put(v), put(vmax), LRS, WDS,
                                      0.9, 0.99, 1e-8, step, decoupled)
        want = []
        for p_, g_, m_, v_, vmax_, lr, wd in zip(p, g, m, v, vmax, LRS, WDS):
            p_, g_ = _decayed(p_, g_, lr, wd, decoupled)
            m_, v_ = 0.9 * m_ + 0.1 * g_, 0.99 * v_ + 0.01 * g_ * g_
            vmax_ = np.maximum(vmax_, v_)
            p_ = p_ - lr * (m_ / (1 - 0.9**step)) / (np.sqrt(vmax_ / (1 - 0.99**step)) + 1e-8)
            want.append((p_, m_, v_, vmax_))
        _compare_step(device, dtype, "amsgrad_step", got, [list(w) for w in zip(*want)],
                      ["params", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"],
                      f"step={step} decoupled={decoupled}")


def _check_rmsprop_momentum(device, dtype, rng):
    put = _put(device, dtype)
    for momentum, centered in [(0.9, False), (0.0, True), (0.5, True)]:
        p, g, a, buf = _state(rng), _state(rng), _state(rng), _state(rng)
        v = [x + 2.0 for x in _state(rng, positive=True)]  # v > a^2: a real centred root
        none = [None] * len(SHAPES)
        got = list(device.ops.rmsprop_momentum_step(
            put(p), put(g), put(v), put(a) if centered else none,
            put(buf) if momentum else none, LRS, WDS, 0.9, 1e-6, momentum, centered))
        want = []
        for p_, g_, v_, a_, b_, lr, wd in zip(p, g, v, a, buf, LRS, WDS):
            g_ = g_ + wd * p_
            v_ = 0.9 * v_ + 0.1 * g_ * g_
            a_ = 0.9 * a_ + 0.1 * g_
            d = np.sqrt(v_ - a_ * a_ if centered else v_) + 1e-6
            b_ = momentum * b_ + g_ / d
            want.append((p_ - lr * (b_ if momentum else g_ / d), v_, a_, b_))
        names = ["params", "square_avgs", "grad_avgs", "bufs"]
        keep = [0, 1] + ([2] if centered else []) + ([3] if momentum else [])
        for k in set(range(4)) - set(keep):
            if any(x is not None for x in got[k]):
                raise AssertionError(f"rmsprop_momentum_step: {names[k]} must stay None")
        _compare_step(device, dtype, "rmsprop_momentum_step", [got[k] for k in keep],
                      [[w[k] for w in want] for k in keep], [names[k] for k in keep],
                      f"momentum={momentum} centered={centered}")


def _check_adagrad(device, dtype, rng):
    put = _put(device, dtype)
    p, g, s = _state(rng), _state(rng), _state(rng, positive=True)
    got = device.ops.adagrad_step(put(p), put(g), put(s), LRS, WDS, 1e-10)
    want = []
    for p_, g_, s_, lr, wd in zip(p, g, s, LRS, WDS):
        g_ = g_ + wd * p_
        s_ = s_ + g_ * g_
        want.append((p_ - lr * g_ / (np.sqrt(s_) + 1e-10), s_))
    _compare_step(device, dtype, "adagrad_step", got, [list(w) for w in zip(*want)],
                  ["params", "state_sums"], "eps=1e-10")


def _check_radam(device, dtype, rng):
    put = _put(device, dtype)
    for step, decoupled in [(2, False), (9, True)]:  # rho_t <= 5, then > 5
        p, g, m, v = _state(rng), _state(rng), _state(rng), _state(rng, positive=True)
        got = device.ops.radam_step(put(p), put(g), put(m), put(v), LRS, WDS, 0.9, 0.999,
                                    1e-8, step, decoupled)
        c1, c2 = 1 - 0.9**step, 1 - 0.999**step
        rho_inf = 2 / 0.001 - 1
        rho = rho_inf - 2 * step * 0.999**step / c2
        want = []
        for p_, g_, m_, v_, lr, wd in zip(p, g, m, v, LRS, WDS):
            p_, g_ = _decayed(p_, g_, lr, wd, decoupled)
            m_, v_ = 0.9 * m_ + 0.1 * g_, 0.999 * v_ + 0.001 * g_ * g_
            if rho > 5:
                r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2)
                                                                  * rho))
                p_ = p_ - lr * r * m_ / c1 * math.sqrt(c2) / (np.sqrt(v_) + 1e-8)
            else:
                p_ = p_ - lr * m_ / c1
            want.append((p_, m_, v_))
        _compare_step(device, dtype, "radam_step", got, [list(w) for w in zip(*want)],
                      ["params", "exp_avgs", "exp_avg_sqs"], f"step={step} (rho={rho:.2f})")


def _check_nadam(device, dtype, rng):
    put = _put(device, dtype)
    step, mu, mu_next, mu_product = 3, 0.45, 0.46, 0.45 * 0.44 * 0.43
    for decoupled in (False, True):
        p, g, m, v = _state(rng), _state(rng), _state(rng), _state(rng, positive=True)
        got = device.ops.nadam_step(put(p), put(g), put(m), put(v), LRS, WDS, 0.9, 0.999, 1e-8,
                                    step, mu, mu_next, mu_product, decoupled)
        want = []
        for p_, g_, m_, v_, lr, wd in zip(p, g, m, v, LRS, WDS):
            p_, g_ = _decayed(p_, g_, lr, wd, decoupled)
            m_, v_ = 0.9 * m_ + 0.1 * g_, 0.999 * v_ + 0.001 * g_ * g_
            d = np.sqrt(v_ / (1 - 0.999**step)) + 1e-8
            p_ = (p_ - lr * (1 - mu) / (1 - mu_product) * g_ / d
                  - lr * mu_next / (1 - mu_product * mu_next) * m_ / d)
            want.append((p_, m_, v_))
        _compare_step(device, dtype, "nadam_step", got, [list(w) for w in zip(*want)],
                      ["params", "exp_avgs", "exp_avg_sqs"], f"decoupled={decoupled}")


def _check_adadelta(device, dtype, rng):
    put = _put(device, dtype)
    p, g, v, u = _state(rng), _state(rng), _state(rng, positive=True), _state(rng, positive=True)
    got = device.ops.adadelta_step(put(p), put(g), put(v), put(u), LRS, WDS, 0.9, 1e-6)
    want = []
    for p_, g_, v_, u_, lr, wd in zip(p, g, v, u, LRS, WDS):
        g_ = g_ + wd * p_
        v_ = 0.9 * v_ + 0.1 * g_ * g_
        delta = np.sqrt(u_ + 1e-6) / np.sqrt(v_ + 1e-6) * g_
        want.append((p_ - lr * delta, v_, 0.9 * u_ + 0.1 * delta * delta))
    _compare_step(device, dtype, "adadelta_step", got, [list(w) for w in zip(*want)],
                  ["params", "square_avgs", "acc_deltas"], "rho=0.9")


def _check_adamax(device, dtype, rng):
    put = _put(device, dtype)
    for step in (1, 5):
        p, g, m, u = _state(rng), _state(rng), _state(rng), _state(rng, positive=True)
        got = device.ops.adamax_step(put(p), put(g), put(m), put(u), LRS, WDS, 0.9, 0.99, 1e-8,
                                     step)
        want = []
        for p_, g_, m_, u_, lr, wd in zip(p, g, m, u, LRS, WDS):
            g_ = g_ + wd * p_
            m_ = 0.9 * m_ + 0.1 * g_
            u_ = np.maximum(0.99 * u_, np.abs(g_) + 1e-8)
            want.append((p_ - lr / (1 - 0.9**step) * m_ / u_, m_, u_))
        _compare_step(device, dtype, "adamax_step", got, [list(w) for w in zip(*want)],
                      ["params", "exp_avgs", "exp_infs"], f"step={step}")


def _check_asgd(device, dtype, rng):
    put = _put(device, dtype)
    for mu in (1.0, 0.25):
        p, g, ax = _state(rng), _state(rng), _state(rng)
        got = device.ops.asgd_step(put(p), put(g), put(ax), LRS, WDS, 1e-2, mu)
        want = []
        for p_, g_, ax_, eta, wd in zip(p, g, ax, LRS, WDS):
            p_ = p_ * (1 - 1e-2 * eta) - eta * (g_ + wd * p_)
            want.append((p_, p_ if mu == 1 else ax_ + mu * (p_ - ax_)))
        _compare_step(device, dtype, "asgd_step", got, [list(w) for w in zip(*want)],
                      ["params", "axs"], f"mu={mu}")


def _check_rprop(device, dtype, rng):
    put = _put(device, dtype)
    p, g, prev = _state(rng), _state(rng), _state(rng)
    prev[0][0] = 0.0  # a zero product keeps the step size
    size = [x + 0.01 for x in _state(rng, positive=True)]
    got = device.ops.rprop_step(put(p), put(g), put(prev), put(size), 0.5, 1.2, 0.02, 1.0)
    want = []
    for p_, g_, prev_, size_ in zip(p, g, prev, size):
        s = np.sign(g_ * prev_)
        size_ = np.clip(size_ * np.where(s > 0, 1.2, np.where(s < 0, 0.5, 1.0)), 0.02, 1.0)
        g_ = np.where(s < 0, 0.0, g_)
        want.append((p_ - np.sign(g_) * size_, g_, size_))
    _compare_step(device, dtype, "rprop_step", got, [list(w) for w in zip(*want)],
                  ["params", "prevs", "step_sizes"], "etas=(0.5, 1.2)")


register(Case("amsgrad_step", check=_check_amsgrad, tol=dict(GRADIENT)))
register(Case("rmsprop_momentum_step", check=_check_rmsprop_momentum, tol=dict(GRADIENT)))
register(Case("adagrad_step", check=_check_adagrad, tol=dict(GRADIENT)))
register(Case("radam_step", check=_check_radam, tol=dict(GRADIENT)))
register(Case("nadam_step", check=_check_nadam, tol=dict(GRADIENT)))
register(Case("adadelta_step", check=_check_adadelta, tol=dict(GRADIENT)))
register(Case("adamax_step", check=_check_adamax, tol=dict(GRADIENT)))
register(Case("asgd_step", check=_check_asgd, tol=dict(GRADIENT)))
register(Case("rprop_step", check=_check_rprop, tol=dict(GRADIENT)))
