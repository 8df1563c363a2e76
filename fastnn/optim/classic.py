"""Adadelta, Adamax, ASGD and Rprop: PyTorch's update rules, through the fused hooks
``adadelta_step``, ``adamax_step``, ``asgd_step`` and ``rprop_step`` (composites where a
backend lacks them).

Each takes torch 2.13's constructor arguments. ``maximize=True`` negates the gradient
before the rule, as PyTorch's; ``foreach`` is accepted (the hooks already update every
parameter of a group in one call); ``capturable`` and ``differentiable`` are accepted and
ignored (fastnn has no CUDA-graph capture, and an optimizer step is never recorded on the
tape). ``state_dict()`` has PyTorch's entries and names, so a torch optimizer's
``state_dict()`` loads here (tensors become arrays) and ours loads into torch once its
arrays are made tensors.

With lr (times ``class_lr``), wd (every parameter, or those of ``decay_classes``) and g the
gradient (plus ``l1 * sign(p)`` on connective parameters):

- Adadelta: g += wd p; v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) g;
  u = rho u + (1 - rho) delta^2; p -= lr delta.
- Adamax: g += wd p; m = lerp(m, g, 1 - b1); u = max(b2 u, |g| + eps);
  p -= lr / (1 - b1^t) m / u.
- ASGD: g += wd p; p = p (1 - lambd eta) - eta g; ax averages p from step t0 on; then
  eta = lr / (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0).
- Rprop: step sizes grow by etaplus while the gradient keeps its sign and shrink by etaminus
  when it flips (that step then moves nothing); p -= sign(g) step_size.
"""

from __future__ import annotations

import math

from fastnn.optim.optimizer import Optimizer
from fastnn.optim.optimizers import by_step, store


class Adadelta(Optimizer):
    """Adadelta as PyTorch's: lr 1.0, rho 0.9, eps 1e-6."""

    STATE_KEYS = ("step", "square_avg", "acc_delta")
    RANGES = {**Optimizer.RANGES, "rho": (0.0, 1.0)}

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False, class_lr=None,
                 l1: float = 0.0, decay_classes=None):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def _update(self, group, params, grads):
        states = []
        for p in params:  # Adadelta's update needs no step count: one hook call for all
            st = self.state.setdefault(id(p), {})
            if "step" not in st:
                st.update(step=0, square_avg=self.zeros_like(p), acc_delta=self.zeros_like(p))
            st["step"] += 1
            states.append(st)
        lrs, decays = self.lrs_and_decays(group, params)
        new_p, new_v, new_u = params[0]._device.ops.adadelta_step(
            [p._data for p in params], grads, [st["square_avg"] for st in states],
            [st["acc_delta"] for st in states], lrs, decays, float(group["rho"]),
            float(group["eps"]))
        store(params, new_p)
        for st, v, u in zip(states, new_v, new_u):
            st["square_avg"], st["acc_delta"] = v, u


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm) as PyTorch's: lr 2e-3, betas (0.9, 0.999),
    eps 1e-8."""

    STATE_KEYS = ("step", "exp_avg", "exp_inf")

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False, class_lr=None,
                 l1: float = 0.0, decay_classes=None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def _update(self, group, params, grads):
        def init(p):
            return {"exp_avg": self.zeros_like(p), "exp_inf": self.zeros_like(p)}

        beta1, beta2 = (float(b) for b in group["betas"])
        for step, items in by_step(self, params, grads, init).items():
            ps = [p for p, _, _ in items]
            lrs, decays = self.lrs_and_decays(group, ps)
            new_p, new_m, new_u = ps[0]._device.ops.adamax_step(
                [p._data for p in ps], [g for _, g, _ in items],
                [st["exp_avg"] for _, _, st in items], [st["exp_inf"] for _, _, st in items],
                lrs, decays, beta1, beta2, float(group["eps"]), int(step))
            store(ps, new_p)
            for (_, _, st), m, u in zip(items, new_m, new_u):
                st["exp_avg"], st["exp_inf"] = m, u


class ASGD(Optimizer):
    """Averaged SGD as PyTorch's: lr 1e-2, lambd 1e-4, alpha 0.75, t0 1e6. The running
    average of the parameters is ``optimizer.state``'s ``ax`` (PyTorch's name)."""

    STATE_KEYS = ("step", "eta", "mu", "ax")
    RANGES = {k: v for k, v in Optimizer.RANGES.items() if k != "alpha"}  # torch: any alpha

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach=None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False, *, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable, class_lr=class_lr, l1=l1,
                                      decay_classes=decay_classes))

    def _check_rule(self, group):
        super()._check_rule(group)
        for name in ("lambd", "alpha", "t0"):
            value = group[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"ASGD: {name} must be a real number, got {value!r}")

    def _update(self, group, params, grads):
        lrs, decays = self.lrs_and_decays(group, params)
        lambd, alpha, t0 = float(group["lambd"]), float(group["alpha"]), float(group["t0"])
        phases: dict[float, list] = {}  # one hook call per averaging weight mu
        for p, g, lr, wd in zip(params, grads, lrs, decays):
            st = self.state.setdefault(id(p), {})
            if "step" not in st:
                st.update(step=0, eta=float(lr), mu=1.0, ax=self.zeros_like(p))
            st["step"] += 1
            phases.setdefault(st["mu"], []).append((p, g, st, lr, wd))
        for mu, items in phases.items():
            ps = [p for p, *_ in items]
            new_p, new_ax = ps[0]._device.ops.asgd_step(
                [p._data for p in ps], [g for _, g, *_ in items],
                [st["ax"] for _, _, st, *_ in items], [st["eta"] for _, _, st, *_ in items],
                [wd for *_, wd in items], lambd, float(mu))
            store(ps, new_p)
            for (_, _, st, lr, _), ax in zip(items, new_ax):
                st["ax"] = ax
                step = st["step"]
                st["eta"] = lr / ((1.0 + lambd * lr * step) ** alpha)
                st["mu"] = 1.0 / max(1.0, step - t0)


class Rprop(Optimizer):
    """Resilient backpropagation as PyTorch's: lr 1e-2 (the first step size), etas
    (0.5, 1.2), step_sizes (1e-6, 50). It has no weight decay, as PyTorch's."""

    STATE_KEYS = ("step", "prev", "step_size")

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False, l1: float = 0.0):
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable,
                                      l1=l1))

    def _check_rule(self, group):
        super()._check_rule(group)
        for name in ("etas", "step_sizes"):
            pair = group[name]
            if (not isinstance(pair, (tuple, list)) or len(pair) != 2 or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) for v in pair)):
                raise TypeError(f"Rprop: {name} must be a pair of numbers, got {pair!r}")
            group[name] = tuple(pair)
        minus, plus = group["etas"]
        if not 0.0 < minus < 1.0 < plus:
            raise ValueError(f"Rprop: etas must satisfy 0 < etaminus < 1 < etaplus, got "
                             f"{group['etas']}")
        low, high = group["step_sizes"]
        if not 0.0 <= low <= high or math.isnan(high):
            raise ValueError(f"Rprop: step_sizes must satisfy 0 <= min <= max, got "
                             f"{group['step_sizes']}")

    def _update(self, group, params, grads):
        states = []
        for p in params:
            st = self.state.setdefault(id(p), {})
            if "step" not in st:
                lr = float(group["lr"])
                st.update(step=0, prev=self.zeros_like(p),
                          step_size=p._device.ops.full(p.shape, lr, p._dtype.name,
                                                       p._device.index))
            st["step"] += 1
            states.append(st)
        minus, plus = (float(e) for e in group["etas"])
        low, high = (float(s) for s in group["step_sizes"])
        new_p, new_prev, new_size = params[0]._device.ops.rprop_step(
            [p._data for p in params], grads, [st["prev"] for st in states],
            [st["step_size"] for st in states], minus, plus, low, high)
        store(params, new_p)
        for st, prev, size in zip(states, new_prev, new_size):
            st["prev"], st["step_size"] = prev, size
