"""SGD, RMSprop, Adam and AdamW: PyTorch's update rules, run through the backend's fused hooks.

Each rule collects the parameters of one group that share a state phase and
calls its hook once (``sgd_step``, ``rmsprop_step``, ``rmsprop_momentum_step``,
``adam_step``, ``amsgrad_step``), so a backend can update all of them in one
fused kernel; the hook returns the new arrays, which are stored back into
``param._data`` and the state.

With per-parameter learning rate lr (times ``class_lr``) and weight decay wd
(every parameter, or those of ``decay_classes``), g the gradient (plus ``l1 * sign(p)`` on
connective parameters):

- SGD: g += wd p; with momentum: b = g (first step) else mu b + (1 - dampening) g;
  g = g + mu b (Nesterov) or b; p -= lr g.
- RMSprop: g += wd p; v = alpha v + (1 - alpha) g^2; centered: a = alpha a + (1 - alpha) g,
  d = sqrt(v - a^2) + eps, else d = sqrt(v) + eps; with momentum: b = mu b + g / d,
  p -= lr b, else p -= lr g / d.
- Adam: g += wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2 (amsgrad: v' = max(v', v));
  p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
- AdamW: as Adam, but p *= 1 - lr wd instead of adding wd p to g.
"""

from __future__ import annotations

from fastnn.ops.storage import rebind
from fastnn.optim.optimizer import Optimizer


def store(params, new_params) -> None:
    for p, data in zip(params, new_params):
        rebind(p, data)


def by_step(optimizer, params, grads, init) -> dict:
    """{step: [(p, g, state)]} after counting this step; ``init(p)`` fills a fresh state.

    Parameters at the same step share their bias corrections: one hook call per step value.
    """
    phases: dict[int, list] = {}
    for p, g in zip(params, grads):
        st = optimizer.state.setdefault(id(p), {})
        if "step" not in st:
            st.update(init(p), step=0)
        st["step"] += 1
        phases.setdefault(st["step"], []).append((p, g, st))
    return phases


class SGD(Optimizer):
    """Stochastic gradient descent with optional (Nesterov) momentum, as PyTorch's."""

    STATE_KEYS = ("momentum_buffer",)  # with momentum; none without

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach=None, differentiable: bool = False,
                 fused=None, class_lr=None, l1: float = 0.0, decay_classes=None):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def state_keys(self, group):
        """momentum_buffer with momentum, nothing without (PyTorch's names)."""
        return ("momentum_buffer",) if group["momentum"] else ()

    def _check_rule(self, group):
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0, got "
                             f"momentum={group['momentum']}, dampening={group['dampening']}")

    def _update(self, group, params, grads):
        momentum = float(group["momentum"])
        # parameters with a momentum buffer and those taking their first step go separately
        phases: dict[bool, list] = {}
        for p, g in zip(params, grads):
            first = momentum != 0 and "momentum_buffer" not in self.state.get(id(p), {})
            phases.setdefault(first, []).append((p, g))
        for first, items in phases.items():
            ps = [p for p, _ in items]
            lrs, decays = self.lrs_and_decays(group, ps)
            bufs = [self.state.get(id(p), {}).get("momentum_buffer") for p in ps]
            ops = ps[0]._device.ops
            new_params, new_bufs = ops.sgd_step(
                [p._data for p in ps], [g for _, g in items], bufs, lrs, decays, momentum,
                float(group["dampening"]), bool(group["nesterov"]), first)
            store(ps, new_params)
            if momentum != 0:
                for p, buf in zip(ps, new_bufs):
                    self.state.setdefault(id(p), {})["momentum_buffer"] = buf


class RMSprop(Optimizer):
    """RMSprop as PyTorch's: alpha 0.99, eps 1e-8, optional momentum and centering."""

    STATE_KEYS = ("square_avg", "step")  # and momentum_buffer, grad_avg where switched on

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False, *, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def state_keys(self, group):
        """step and square_avg, plus momentum_buffer and grad_avg where switched on."""
        return (("step", "square_avg") + (("momentum_buffer",) if group["momentum"] else ())
                + (("grad_avg",) if group["centered"] else ()))

    def _update(self, group, params, grads):
        momentum, centered = float(group["momentum"]), bool(group["centered"])
        lrs, decays = self.lrs_and_decays(group, params)

        def init(p):
            st = {"square_avg": self.zeros_like(p)}
            if momentum:
                st["momentum_buffer"] = self.zeros_like(p)
            if centered:
                st["grad_avg"] = self.zeros_like(p)
            return st

        states = []
        for p in params:  # RMSprop's update needs no step count: one hook call for all
            st = self.state.setdefault(id(p), {})
            if "step" not in st:
                st.update(init(p), step=0)
            st["step"] += 1
            states.append(st)
        ops = params[0]._device.ops
        alpha, eps = float(group["alpha"]), float(group["eps"])
        if not momentum and not centered:  # the plain rule keeps its own (older) hook
            new_p, new_v = ops.rmsprop_step([p._data for p in params], grads,
                                            [st["square_avg"] for st in states], lrs, decays,
                                            alpha, eps)
            store(params, new_p)
            for st, v in zip(states, new_v):
                st["square_avg"] = v
            return
        new_p, new_v, new_a, new_b = ops.rmsprop_momentum_step(
            [p._data for p in params], grads, [st["square_avg"] for st in states],
            [st.get("grad_avg") for st in states], [st.get("momentum_buffer") for st in states],
            lrs, decays, alpha, eps, momentum, centered)
        store(params, new_p)
        for st, v, a, b in zip(states, new_v, new_a, new_b):
            st["square_avg"] = v
            if centered:
                st["grad_avg"] = a
            if momentum:
                st["momentum_buffer"] = b


RMSProp = RMSprop  # the name fastnn used first


class Adam(Optimizer):
    """Adam, PyTorch's rule: betas (0.9, 0.999), eps 1e-8, L2 weight decay added to g."""

    STATE_KEYS = ("exp_avg", "exp_avg_sq", "step")  # and max_exp_avg_sq with amsgrad

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      class_lr=class_lr, l1=l1, decay_classes=decay_classes))

    def state_keys(self, group):
        """step, exp_avg and exp_avg_sq, plus max_exp_avg_sq with amsgrad."""
        return ("step", "exp_avg", "exp_avg_sq") + (
            ("max_exp_avg_sq",) if group["amsgrad"] else ())

    def _update(self, group, params, grads):
        amsgrad = bool(group["amsgrad"])

        def init(p):
            st = {"exp_avg": self.zeros_like(p), "exp_avg_sq": self.zeros_like(p)}
            if amsgrad:
                st["max_exp_avg_sq"] = self.zeros_like(p)
            return st

        beta1, beta2 = (float(b) for b in group["betas"])
        eps, decoupled = float(group["eps"]), bool(group["decoupled_weight_decay"])
        for step, items in by_step(self, params, grads, init).items():
            ps = [p for p, _, _ in items]
            lrs, decays = self.lrs_and_decays(group, ps)
            ops = ps[0]._device.ops
            data, gs = [p._data for p in ps], [g for _, g, _ in items]
            ms = [st["exp_avg"] for _, _, st in items]
            vs = [st["exp_avg_sq"] for _, _, st in items]
            if amsgrad:
                for p, _, st in items:  # amsgrad switched on between steps: no maximum yet
                    if "max_exp_avg_sq" not in st:
                        st["max_exp_avg_sq"] = self.zeros_like(p)
                new_p, new_m, new_v, new_max = ops.amsgrad_step(
                    data, gs, ms, vs, [st["max_exp_avg_sq"] for _, _, st in items], lrs,
                    decays, beta1, beta2, eps, int(step), decoupled)
                for (_, _, st), vmax in zip(items, new_max):
                    st["max_exp_avg_sq"] = vmax
            else:
                new_p, new_m, new_v = ops.adam_step(data, gs, ms, vs, lrs, decays, beta1, beta2,
                                                    eps, int(step), decoupled)
            store(ps, new_p)
            for (_, _, st), m, v in zip(items, new_m, new_v):
                st["exp_avg"], st["exp_avg_sq"] = m, v


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (p *= 1 - lr * wd), default wd 0.01."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach=None, capturable: bool = False,
                 differentiable: bool = False, fused=None, class_lr=None, l1: float = 0.0,
                 decay_classes=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, class_lr=class_lr, l1=l1,
                         decay_classes=decay_classes)
