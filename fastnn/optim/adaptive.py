"""Adagrad, RAdam and NAdam: PyTorch's update rules, through the fused hooks
``adagrad_step``, ``radam_step`` and ``nadam_step`` (composites where a backend lacks them).

With lr (times ``class_lr``), wd (every parameter, or those of ``decay_classes``) and g
the gradient:

- Adagrad: g += wd p; s += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps),
  s starting at ``initial_accumulator_value``.
- RAdam: Adam's moments; while the variance estimate is untrustworthy (rho_t <= 5)
  p -= lr m / (1 - b1^t), then the rectified adaptive step (see ``radam_step``).
- NAdam: Adam's moments with Nesterov momentum whose coefficient
  mu_t = b1 (1 - 0.5 * 0.96^(t momentum_decay)) warms up (see ``nadam_step``).

RAdam and NAdam take ``decoupled_weight_decay=True`` for AdamW-style decay, as PyTorch's.
"""

from __future__ import annotations

from fastnn.optim.optimizer import Optimizer
from fastnn.optim.optimizers import by_step, store


class Adagrad(Optimizer):
    """Adagrad as PyTorch's: lr 1e-2, lr_decay 0, eps 1e-10."""

    STATE_KEYS = ("step", "sum")

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))
        # as PyTorch's, every parameter given here has its state at once (step 0, the sum at
        # initial_accumulator_value): state_dict() and opt.state[p] hold it before a step
        for group in self.param_groups:
            for p in group["params"]:
                self.state.setdefault(id(p), {}).update(self._fresh(group, p), step=0)
                self._state_home[id(p)] = (p._device, p._dtype)

    @staticmethod
    def _fresh(group, p) -> dict:
        start = float(group["initial_accumulator_value"])
        return {"sum": p._device.ops.full(p.shape, start, p._dtype.name, p._device.index)}

    def _update(self, group, params, grads):
        def init(p):
            return self._fresh(group, p)

        for step, items in by_step(self, params, grads, init).items():
            ps = [p for p, _, _ in items]
            lrs, decays = self.lrs_and_decays(group, ps)
            decay = 1.0 + (step - 1) * float(group["lr_decay"])
            new_p, new_s = ps[0]._device.ops.adagrad_step(
                [p._data for p in ps], [g for _, g, _ in items], [st["sum"] for _, _, st in items],
                [lr / decay for lr in lrs], decays, float(group["eps"]))
            store(ps, new_p)
            for (_, _, st), s in zip(items, new_s):
                st["sum"] = s


class _AdamFamily(Optimizer):
    """Shared by RAdam and NAdam: betas, eps, weight decay (L2 or decoupled), Adam's moments."""

    def _moments_init(self, p) -> dict:
        return {"exp_avg": self.zeros_like(p), "exp_avg_sq": self.zeros_like(p)}

    def _phase(self, group, items):
        ps = [p for p, _, _ in items]
        lrs, decays = self.lrs_and_decays(group, ps)
        beta1, beta2 = (float(b) for b in group["betas"])
        return ps, ([p._data for p in ps], [g for _, g, _ in items],
                    [st["exp_avg"] for _, _, st in items],
                    [st["exp_avg_sq"] for _, _, st in items], lrs, decays,
                    beta1, beta2, float(group["eps"]))

    @staticmethod
    def _store_moments(items, new_m, new_v):
        for (_, _, st), m, v in zip(items, new_m, new_v):
            st["exp_avg"], st["exp_avg_sq"] = m, v


class RAdam(_AdamFamily):
    """RAdam as PyTorch's: lr 1e-3, betas (0.9, 0.999), eps 1e-8."""

    STATE_KEYS = ("step", "exp_avg", "exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      capturable=capturable, differentiable=differentiable,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def _update(self, group, params, grads):
        for step, items in by_step(self, params, grads, self._moments_init).items():
            ps, args = self._phase(group, items)
            new_p, new_m, new_v = ps[0]._device.ops.radam_step(
                *args, int(step), bool(group["decoupled_weight_decay"]))
            store(ps, new_p)
            self._store_moments(items, new_m, new_v)


class NAdam(_AdamFamily):
    """NAdam as PyTorch's: lr 2e-3, betas (0.9, 0.999), eps 1e-8, momentum_decay 4e-3."""

    STATE_KEYS = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      capturable=capturable, differentiable=differentiable,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def _init(self, p) -> dict:
        return {**self._moments_init(p), "mu_product": 1.0}

    def _update(self, group, params, grads):
        beta1 = float(group["betas"][0])
        decay = float(group["momentum_decay"])
        phases: dict[tuple, list] = {}
        for step, items in by_step(self, params, grads, self._init).items():
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
            for item in items:
                item[2]["mu_product"] *= mu
                # parameters share a call when their whole mu history agrees
                phases.setdefault((step, item[2]["mu_product"]), []).append(item)
        for (step, mu_product), items in phases.items():
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
            ps, args = self._phase(group, items)
            new_p, new_m, new_v = ps[0]._device.ops.nadam_step(
                *args, int(step), mu, mu_next, mu_product,
                bool(group["decoupled_weight_decay"]))
            store(ps, new_p)
            self._store_moments(items, new_m, new_v)
