"""Optimizer steps for all parameters in one kernel launch (cu/optim*.cu), every rule.

Parameters are grouped by dtype; each group of up to ``launch.MAX_TENSORS``
tensors is one launch whose tensor table travels by value as a kernel
argument, so a step makes no host-to-device copy and no synchronisation.
Params and optimizer state are updated in place; a parameter that is not
C-contiguous (or a dtype without a kernel) takes the cupy path below instead.
"""

from __future__ import annotations

import math

from fastnn.api import composite_optim
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels, launch
from fastnn_cuda._cupy import cupy as cp


def _matches(state, p) -> bool:
    return state.dtype == p.dtype and state.shape == p.shape and state.flags.c_contiguous


def _kernel_groups(params, *states):
    """{dtype: [indices]} of the params the kernels can update in place.

    A parameter qualifies when it is C-contiguous with a kernel dtype and each
    of its optimizer states (``states`` are lists parallel to ``params``; None
    entries are created by the step) has its dtype, shape and layout: the
    kernel reads every state through the parameter's element type and index.
    """
    groups: dict[str, list[int]] = {}
    for k, p in enumerate(params):
        if not (kernels.has_kernel(p.dtype) and p.flags.c_contiguous):
            continue
        if all(state[k] is None or _matches(state[k], p) for state in states):
            groups.setdefault(p.dtype, []).append(k)
    return groups


_TABLES: dict = {}
_TABLES_KEPT = 16


def _tables(pointers, sizes, lrs, wds, flags):
    """pack_step_tables, remembered: a training loop asks for the same table every step
    (parameters are updated in place, and the memory pool hands gradients the same
    blocks), and a lookup costs a fraction of packing. A record is never mutated
    after packing, and the launch copies it, so sharing one is safe."""
    key = (tuple(pointers), tuple(sizes), tuple(lrs), tuple(wds),
           None if flags is None else tuple(flags))
    tables = _TABLES.get(key)
    if tables is None:
        if len(_TABLES) >= _TABLES_KEPT:
            _TABLES.clear()
        tables = _TABLES[key] = launch.pack_step_tables(pointers, sizes, lrs, wds, flags)
    return tables


def _launch(base, dtype, device_id, pointers, sizes, lrs, wds, flags, scalars):
    fn = kernels.function(base, dtype, device_id)
    for record, blocks in _tables(pointers, sizes, lrs, wds, flags):
        fn((blocks,), (launch.STEP_THREADS,), (record,) + scalars)


def _contiguous_grad(g, p):
    # NOTE: the caller must hold the result until the launch is enqueued: the
    # table keeps only its address, and cupy's pool would hand freed memory to
    # the next allocation before the kernel reads it.
    if g.dtype == p.dtype and g.flags.c_contiguous:
        return g
    return cp.ascontiguousarray(g).astype(p.dtype, copy=False)


@hookimpl
def sgd_step(params, grads, bufs, lrs, weight_decays, momentum, dampening, nesterov, first_step):
    params, bufs = list(params), list(bufs)
    done = set()
    for dtype, idx in _kernel_groups(params, *([bufs] if momentum else [])).items():
        grads_c = {k: _contiguous_grad(grads[k], params[k]) for k in idx}
        flags = []
        for k in idx:
            fresh = bool(momentum) and (first_step or bufs[k] is None)
            if momentum and bufs[k] is None:
                bufs[k] = cp.empty_like(params[k])
            flags.append(fresh)
        pointers = [(params[k].data.ptr, grads_c[k].data.ptr,
                     bufs[k].data.ptr if momentum else 0) for k in idx]
        _launch("sgd_step", dtype, params[idx[0]].device.id, pointers,
                [params[k].size for k in idx], [lrs[k] for k in idx],
                [weight_decays[k] for k in idx], flags,
                (float(momentum), float(dampening), int(bool(nesterov))))
        done.update(idx)
    for k in range(len(params)):
        if k not in done:
            params[k], bufs[k] = _sgd_one(params[k], grads[k], bufs[k], lrs[k],
                                          weight_decays[k], momentum, dampening, nesterov,
                                          first_step)
    return params, bufs


def _sgd_one(p, g, buf, lr, wd, momentum, dampening, nesterov, first_step):
    if wd:
        g = g + wd * p
    if momentum:
        if first_step or buf is None:
            buf = g.copy()
        else:
            buf = momentum * buf + (1.0 - dampening) * g
        g = g + momentum * buf if nesterov else buf
    return p - lr * g, buf


@hookimpl
def adam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
              step, decoupled):
    params, exp_avgs, exp_avg_sqs = list(params), list(exp_avgs), list(exp_avg_sqs)
    # NOTE: float(): a NumPy float32 here would reach the kernel's double as 4 bytes
    bias1, bias2 = float(1.0 - beta1**step), float(1.0 - beta2**step)
    done = set()
    for dtype, idx in _kernel_groups(params, exp_avgs, exp_avg_sqs).items():
        grads_c = {k: _contiguous_grad(grads[k], params[k]) for k in idx}
        pointers = [(params[k].data.ptr, grads_c[k].data.ptr, exp_avgs[k].data.ptr,
                     exp_avg_sqs[k].data.ptr) for k in idx]
        _launch("adam_step", dtype, params[idx[0]].device.id, pointers,
                [params[k].size for k in idx], [lrs[k] for k in idx],
                [weight_decays[k] for k in idx], None,
                (float(beta1), float(beta2), float(eps), bias1, bias2, int(bool(decoupled))))
        done.update(idx)
    for k in range(len(params)):
        if k in done:
            continue
        p, g, m, v, lr, wd = (params[k], grads[k], exp_avgs[k], exp_avg_sqs[k], lrs[k],
                              weight_decays[k])
        if wd and decoupled:
            p = p * (1.0 - lr * wd)
        elif wd:
            g = g + wd * p
        m = beta1 * m + (1.0 - beta1) * g
        v = beta2 * v + (1.0 - beta2) * g * g
        params[k] = p - (lr / bias1) * m / (cp.sqrt(v / bias2) + eps)
        exp_avgs[k], exp_avg_sqs[k] = m, v
    return params, exp_avgs, exp_avg_sqs


@hookimpl
def rmsprop_step(params, grads, square_avgs, lrs, weight_decays, alpha, eps):
    params, square_avgs = list(params), list(square_avgs)
    done = set()
    for dtype, idx in _kernel_groups(params, square_avgs).items():
        grads_c = {k: _contiguous_grad(grads[k], params[k]) for k in idx}
        pointers = [(params[k].data.ptr, grads_c[k].data.ptr, square_avgs[k].data.ptr)
                    for k in idx]
        _launch("rmsprop_step", dtype, params[idx[0]].device.id, pointers,
                [params[k].size for k in idx], [lrs[k] for k in idx],
                [weight_decays[k] for k in idx], None, (float(alpha), float(eps)))
        done.update(idx)
    for k in range(len(params)):
        if k in done:
            continue
        p, g, v = params[k], grads[k], square_avgs[k]
        if weight_decays[k]:
            g = g + weight_decays[k] * p
        v = alpha * v + (1.0 - alpha) * g * g
        params[k] = p - lrs[k] * g / (cp.sqrt(v) + eps)
        square_avgs[k] = v
    return params, square_avgs


# ---------------------------------------------------------------- the newer rules

class _CupyOps:
    """The primitives fastnn's optimizer composites use, on cupy arrays: the path of a
    parameter the kernels do not take (float16, a strided layout)."""

    @staticmethod
    def add(a, b):
        return cp.add(a, b)

    @staticmethod
    def sub(a, b):
        return cp.subtract(a, b)

    @staticmethod
    def mul(a, b):
        return cp.multiply(a, b)

    @staticmethod
    def div(a, b):
        return cp.divide(a, b)

    @staticmethod
    def sqrt(a):
        return cp.sqrt(a)

    @staticmethod
    def maximum(a, b):
        return cp.maximum(a, b)

    @staticmethod
    def minimum(a, b):
        return cp.minimum(a, b)

    @staticmethod
    def abs(a):
        return cp.abs(a)

    @staticmethod
    def sign(a):
        return cp.sign(a)

    @staticmethod
    def greater(a, b):
        return cp.greater(a, b)

    @staticmethod
    def less(a, b):
        return cp.less(a, b)

    @staticmethod
    def where(cond, a, b):
        return cp.where(cond, a, b).astype(a.dtype, copy=False)


def _table_step(base, params, grads, states, lrs, wds, scalars, composite, rest):
    """One launch per dtype for the parameters the kernels take (states[j][k] updated in
    place); the others through ``composite`` (a fastnn.api.composite_optim rule, called
    with ``rest``, the arguments after the learning rates and weight decays).

    Returns ``[params] + states``, each a new list."""
    params, states = list(params), [list(s) for s in states]
    done = set()
    for dtype, idx in _kernel_groups(params, *states).items():
        grads_c = {k: _contiguous_grad(grads[k], params[k]) for k in idx}
        pointers = [(params[k].data.ptr, grads_c[k].data.ptr,
                     *[s[k].data.ptr if s[k] is not None else 0 for s in states]) for k in idx]
        _launch(base, dtype, params[idx[0]].device.id, pointers,
                [params[k].size for k in idx], [lrs[k] for k in idx], [wds[k] for k in idx],
                None, scalars)
        done.update(idx)
    left = [k for k in range(len(params)) if k not in done]
    if left:
        pick = lambda seq: [seq[k] for k in left]  # noqa: E731
        out = composite(_CupyOps, pick(params), pick(grads), *[pick(s) for s in states],
                        pick(lrs), pick(wds), *rest)
        for column, new in zip([params] + states, out):
            for k, value in zip(left, new):
                column[k] = value
    return [params] + states


@hookimpl
def amsgrad_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lrs, weight_decays,
                 beta1, beta2, eps, step, decoupled):
    bias1, bias2 = float(1.0 - beta1**step), float(1.0 - beta2**step)
    return tuple(_table_step(
        "amsgrad_step", params, grads, [exp_avgs, exp_avg_sqs, max_exp_avg_sqs], lrs,
        weight_decays, (float(beta1), float(beta2), float(eps), bias1, bias2,
                        int(bool(decoupled))),
        composite_optim.amsgrad_step, (beta1, beta2, eps, step, decoupled)))


@hookimpl
def rmsprop_momentum_step(params, grads, square_avgs, grad_avgs, bufs, lrs, weight_decays,
                          alpha, eps, momentum, centered):
    # a state that is off stays None: the kernel never reads its (null) slot
    return tuple(_table_step(
        "rmsprop_momentum_step", params, grads, [square_avgs, grad_avgs, bufs], lrs,
        weight_decays, (float(alpha), float(eps), float(momentum), int(bool(centered))),
        composite_optim.rmsprop_momentum_step, (alpha, eps, momentum, centered)))


@hookimpl
def adagrad_step(params, grads, state_sums, lrs, weight_decays, eps):
    return tuple(_table_step("adagrad_step", params, grads, [state_sums], lrs, weight_decays,
                             (float(eps),), composite_optim.adagrad_step, (eps,)))


@hookimpl
def radam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, decoupled):
    bias1, bias2 = 1.0 - beta1**step, 1.0 - beta2**step
    rect = composite_optim.radam_rectification(beta2, step)
    adaptive = 0.0 if rect is None else rect * math.sqrt(bias2) / bias1
    return tuple(_table_step(
        "radam_step", params, grads, [exp_avgs, exp_avg_sqs], lrs, weight_decays,
        (float(beta1), float(beta2), float(eps), float(1.0 / bias1), float(adaptive),
         int(rect is not None), int(bool(decoupled))),
        composite_optim.radam_step, (beta1, beta2, eps, step, decoupled)))


@hookimpl
def nadam_step(params, grads, exp_avgs, exp_avg_sqs, lrs, weight_decays, beta1, beta2, eps,
               step, mu, mu_next, mu_product, decoupled):
    g_factor = (1.0 - mu) / (1.0 - mu_product)
    m_factor = mu_next / (1.0 - mu_product * mu_next)
    return tuple(_table_step(
        "nadam_step", params, grads, [exp_avgs, exp_avg_sqs], lrs, weight_decays,
        (float(beta1), float(beta2), float(eps), float(1.0 - beta2**step), float(g_factor),
         float(m_factor), int(bool(decoupled))),
        composite_optim.nadam_step,
        (beta1, beta2, eps, step, mu, mu_next, mu_product, decoupled)))


# ---------------------------------------------------------------- Adadelta, Adamax, ASGD, Rprop

@hookimpl
def adadelta_step(params, grads, square_avgs, acc_deltas, lrs, weight_decays, rho, eps):
    return tuple(_table_step(
        "adadelta_step", params, grads, [square_avgs, acc_deltas], lrs, weight_decays,
        (float(rho), float(eps)), composite_optim.adadelta_step, (rho, eps)))


@hookimpl
def adamax_step(params, grads, exp_avgs, exp_infs, lrs, weight_decays, beta1, beta2, eps, step):
    return tuple(_table_step(
        "adamax_step", params, grads, [exp_avgs, exp_infs], lrs, weight_decays,
        (float(1.0 - beta1), float(beta2), float(eps), float(1.0 - beta1**step)),
        composite_optim.adamax_step, (beta1, beta2, eps, step)))


@hookimpl
def asgd_step(params, grads, axs, etas, weight_decays, lambd, mu):
    return tuple(_table_step(
        "asgd_step", params, grads, [axs], etas, weight_decays,
        (float(lambd), float(mu), int(mu == 1)), composite_optim.asgd_step, (lambd, mu)))


def _rprop_composite(ops, params, grads, prevs, step_sizes, _lrs, _wds, *rest):
    return composite_optim.rprop_step(ops, params, grads, prevs, step_sizes, *rest)


@hookimpl
def rprop_step(params, grads, prevs, step_sizes, etaminus, etaplus, step_size_min,
               step_size_max):
    zeros = [0.0] * len(params)  # Rprop has no learning rate or weight decay of its own
    rest = (etaminus, etaplus, step_size_min, step_size_max)
    return tuple(_table_step("rprop_step", params, grads, [prevs, step_sizes], zeros, zeros,
                             tuple(float(v) for v in rest), _rprop_composite, rest))
