"""SGD, RMSProp, Adam and AdamW: PyTorch's update rules, run through the backend's fused hooks.

Each rule collects the parameters of one group that share a state phase and
calls its hook once (``sgd_step``, ``rmsprop_step``, ``adam_step``), so a
backend can update all of them in one fused kernel; the hook returns the new
arrays, which are stored back into ``param._data`` and the state.

With per-parameter learning rate lr (times ``class_lr``) and weight decay wd
(connective parameters only), g the gradient:

- SGD: g += wd p; with momentum: b = g (first step) else mu b + (1 - dampening) g;
  g = g + mu b (Nesterov) or b; p -= lr g.
- RMSProp: g += wd p; v = alpha v + (1 - alpha) g^2; p -= lr g / (sqrt(v) + eps).
- Adam: g += wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
  p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
- AdamW: as Adam, but p *= 1 - lr wd instead of adding wd p to g.
"""

from __future__ import annotations

from fastnn.optim.optimizer import Optimizer, check_number


def _store(params, new_params) -> None:
    for p, data in zip(params, new_params):
        p._data = data


class SGD(Optimizer):
    """Stochastic gradient descent with optional (Nesterov) momentum, as PyTorch's."""

    STATE_KEYS = ("momentum_buffer",)

    def __init__(self, params, lr: float, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, dampening: float = 0.0, class_lr=None):
        for name, value in (("lr", lr), ("momentum", momentum), ("dampening", dampening)):
            check_number("SGD", name, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        if momentum < 0:
            raise ValueError(f"SGD: momentum must be >= 0, got {momentum}")
        super().__init__(params, dict(lr=lr, momentum=momentum, nesterov=nesterov,
                                      weight_decay=weight_decay, dampening=dampening,
                                      class_lr=class_lr))

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
            _store(ps, new_params)
            if momentum != 0:
                for p, buf in zip(ps, new_bufs):
                    self.state.setdefault(id(p), {})["momentum_buffer"] = buf


class RMSProp(Optimizer):
    """RMSProp (PyTorch's, without momentum or centering): alpha 0.99, eps 1e-8."""

    STATE_KEYS = ("square_avg", "step")

    def __init__(self, params, lr: float = 0.01, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, class_lr=None):
        for name, value in (("lr", lr), ("alpha", alpha), ("eps", eps)):
            check_number("RMSProp", name, value)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"RMSProp: alpha must be in [0, 1], got {alpha}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      class_lr=class_lr))

    def _update(self, group, params, grads):
        lrs, decays = self.lrs_and_decays(group, params)
        states = [self.state.setdefault(id(p), {}) for p in params]
        for p, st in zip(params, states):
            if "square_avg" not in st:
                st["square_avg"] = self.zeros_like(p)
                st["step"] = 0
            st["step"] += 1
        ops = params[0]._device.ops
        new_params, new_v = ops.rmsprop_step(
            [p._data for p in params], grads, [st["square_avg"] for st in states], lrs, decays,
            float(group["alpha"]), float(group["eps"]))
        _store(params, new_params)
        for st, v in zip(states, new_v):
            st["square_avg"] = v


class Adam(Optimizer):
    """Adam, PyTorch's rule: betas (0.9, 0.999), eps 1e-8, L2 weight decay added to g."""

    decoupled = False
    STATE_KEYS = ("exp_avg", "exp_avg_sq", "step")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, class_lr=None):
        owner = type(self).__name__
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
        beta1, beta2 = (check_number(owner, "betas", b) for b in betas)
        check_number(owner, "lr", lr)
        check_number(owner, "eps", eps)
        if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=(float(beta1), float(beta2)), eps=eps,
                                      weight_decay=weight_decay, class_lr=class_lr))

    def _update(self, group, params, grads):
        # parameters at the same step share the bias corrections: one hook call per step value
        phases: dict[int, list] = {}
        for p, g in zip(params, grads):
            st = self.state.setdefault(id(p), {})
            if "exp_avg" not in st:
                st.update(step=0, exp_avg=self.zeros_like(p), exp_avg_sq=self.zeros_like(p))
            st["step"] += 1
            phases.setdefault(st["step"], []).append((p, g, st))
        beta1, beta2 = group["betas"]
        for step, items in phases.items():
            ps = [p for p, _, _ in items]
            lrs, decays = self.lrs_and_decays(group, ps)
            ops = ps[0]._device.ops
            new_p, new_m, new_v = ops.adam_step(
                [p._data for p in ps], [g for _, g, _ in items],
                [st["exp_avg"] for _, _, st in items], [st["exp_avg_sq"] for _, _, st in items],
                lrs, decays, float(beta1), float(beta2), float(group["eps"]), int(step),
                self.decoupled)
            _store(ps, new_p)
            for (_, _, st), m, v in zip(items, new_m, new_v):
                st["exp_avg"], st["exp_avg_sq"] = m, v


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (p *= 1 - lr * wd), default wd 0.01."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, class_lr=None):
        super().__init__(params, lr, betas, eps, weight_decay, class_lr)
