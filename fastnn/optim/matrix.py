"""Muon and Adafactor: PyTorch's rules that look at a parameter as a matrix.

Both are composites of the backend's primitives (matmul, sums, sqrt), without a fused hook:
their work is a few matrix products or row and column reductions per parameter, which the
backends' own kernels already do, not a long chain of elementwise passes.

- Muon (2-D parameters only): b = lerp(b, g, 1 - mu); u = lerp(g, b, mu) (Nesterov) or b;
  O = Newton-Schulz(u): ``ns_steps`` quintic iterations X = a X + (b A + c A A) X with
  A = X X^T, from X = u / max(|u|, eps), on the wide orientation; p *= 1 - lr wd;
  p -= lr' O with lr' = lr sqrt(max(1, rows/cols)) ("original") or 0.2 lr sqrt(max(rows,
  cols)) ("match_rms_adamw"). PyTorch runs the iteration in bfloat16; fastnn runs it in the
  parameter's dtype, so its orthogonalisation is the same iteration without the bfloat16
  rounding (it agrees with torch's to about 1e-2, and with torch's own code run in float64
  to rounding).
- Adafactor: factored second moments (a row and a column mean of g^2 for a parameter of
  two or more dimensions, a full one for a vector) with the decay 1 - t^beta2_decay, the
  relative step size min(lr, 1/sqrt(t)) times max(eps2, RMS(p)), and the update clipped to
  RMS <= d, as PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.composite_optim import lerp
from fastnn.optim.optimizer import Optimizer
from fastnn.optim.optimizers import store

MUON_NS = (3.4445, -4.7750, 2.0315)


def _scalar(ops, x) -> float:
    return float(np.asarray(ops.to_numpy(x)))


def newton_schulz(ops, g, coefficients, steps: int, eps: float):
    """PyTorch's quintic Newton-Schulz orthogonalisation of the 2-D array ``g``."""
    a, b, c = (float(v) for v in coefficients)
    tall = g.shape[0] > g.shape[1]
    x = ops.contiguous(ops.transpose(g, (1, 0))) if tall else g
    norm = ops.sqrt(ops.sum(ops.mul(x, x), None, False))
    x = ops.div(x, ops.maximum(norm, eps))
    for _ in range(steps):
        gram = ops.matmul(x, ops.transpose(x, (1, 0)))
        update = ops.add(ops.mul(gram, b), ops.mul(ops.matmul(gram, gram), c))
        x = ops.add(ops.mul(x, a), ops.matmul(update, x))
    return ops.contiguous(ops.transpose(x, (1, 0))) if tall else x


def muon_lr(lr: float, adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon as PyTorch's: momentum, then Newton-Schulz orthogonalisation of each 2-D
    parameter's update, decoupled weight decay (lr 1e-3, weight_decay 0.1, momentum 0.95,
    nesterov True, ns_steps 5, eps 1e-7)."""

    STATE_KEYS = ("momentum_buffer",)
    FLAGS = Optimizer.FLAGS

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True, ns_coefficients=MUON_NS,
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn=None):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))

    def add_param_group(self, group: dict) -> None:
        """PyTorch's add_param_group; Muon refuses a parameter that is not 2-D."""
        super().add_param_group(group)
        for p in self.param_groups[-1]["params"]:
            if len(p.shape) != 2:
                self.param_groups.pop()
                raise ValueError(f"Muon: only 2-D parameters, got one of shape {p.shape}; give "
                                 "biases and embeddings to another optimizer (e.g. AdamW)")

    def _check_rule(self, group):
        coefficients, steps = group["ns_coefficients"], group["ns_steps"]
        if not isinstance(coefficients, (tuple, list)) or len(coefficients) != 3:
            raise ValueError(f"Muon: ns_coefficients must be 3 numbers (a, b, c), got "
                             f"{coefficients!r}")
        group["ns_coefficients"] = tuple(float(v) for v in coefficients)
        if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps < 100:
            raise ValueError(f"Muon: ns_steps must be an integer in [0, 100), got {steps!r}")
        if group["adjust_lr_fn"] not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Muon: adjust_lr_fn must be None, 'original' or "
                             f"'match_rms_adamw', got {group['adjust_lr_fn']!r}")

    def _update(self, group, params, grads):
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        momentum = float(group["momentum"])
        new = []
        for p, g in zip(params, grads):
            ops = p._device.ops
            st = self.state.setdefault(id(p), {})
            buf = st.get("momentum_buffer")
            buf = lerp(ops, self.zeros_like(p) if buf is None else buf, g, 1.0 - momentum)
            st["momentum_buffer"] = buf
            update = lerp(ops, g, buf, momentum) if group["nesterov"] else buf
            update = newton_schulz(ops, update, group["ns_coefficients"], group["ns_steps"],
                                   float(group["eps"]))
            data = ops.mul(p._data, 1.0 - lr * wd)
            new.append(ops.sub(data, ops.mul(update, muon_lr(lr, group["adjust_lr_fn"],
                                                              p.shape))))
        store(params, new)


class Adafactor(Optimizer):
    """Adafactor as PyTorch's: lr 1e-2, beta2_decay -0.8, eps (None, 1e-3) (None: the
    dtype's machine epsilon), d 1.0, weight_decay 0.0 (decoupled, p *= 1 - lr wd)."""

    STATE_KEYS = None  # step with row_var and col_var, or with variance: checked below

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps=(None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach=None, maximize: bool = False):
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    RANGES = {k: v for k, v in Optimizer.RANGES.items() if k != "eps"}

    def _check_rule(self, group):
        super()._check_rule(group)
        eps = group["eps"]
        if not isinstance(eps, (tuple, list)) or len(eps) != 2:
            raise ValueError(f"Adafactor: eps must be a pair (eps1 or None, eps2), got {eps!r}")
        if (eps[0] is not None and not eps[0] >= 0) or not eps[1] >= 0:
            raise ValueError(f"Adafactor: eps must be >= 0, got {eps!r}")
        group["eps"] = tuple(eps)
        if not group["beta2_decay"] <= 0:
            raise ValueError(f"Adafactor: beta2_decay must be <= 0, got {group['beta2_decay']}")
        if not group["d"] >= 1:
            raise ValueError(f"Adafactor: d (the clipping threshold) must be >= 1, got "
                             f"{group['d']}")

    def _check_state_keys(self, key, st, group):
        if st and set(st) not in ({"step", "row_var", "col_var"}, {"step", "variance"}):
            raise ValueError(f"Adafactor.load_state_dict: parameter {key} has state "
                             f"{sorted(st)}, but Adafactor keeps step with row_var and "
                             "col_var, or with variance (was it saved from another optimizer?)")

    def _state_value(self, owner, key, name, value, p, strict):
        if name not in ("row_var", "col_var"):
            return super()._state_value(owner, key, name, value, p, True)
        host = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        want = list(p.shape)
        want[-1 if name == "row_var" else -2] = 1
        if list(host.shape) != want:
            raise ValueError(f"{owner}: state {name!r} of parameter {key} has shape "
                             f"{tuple(host.shape)}, expected {tuple(want)}")
        return p._device.ops.from_numpy(np.asarray(host, p._dtype.numpy), p._device.index)

    def _update(self, group, params, grads):
        lr, wd, d = float(group["lr"]), float(group["weight_decay"]), float(group["d"])
        eps1, eps2 = group["eps"]
        new = []
        for p, g in zip(params, grads):
            ops, shape = p._device.ops, p.shape
            e1 = float(np.finfo(p._dtype.numpy).eps) if eps1 is None else float(eps1)
            st = self.state.setdefault(id(p), {})
            if "step" not in st:
                st["step"] = 0
                if len(shape) > 1:
                    row, col = list(shape), list(shape)
                    row[-1], col[-2] = 1, 1
                    dt, idx = p._dtype.name, p._device.index
                    st["row_var"] = ops.full(tuple(row), 0, dt, idx)
                    st["col_var"] = ops.full(tuple(col), 0, dt, idx)
                else:
                    st["variance"] = self.zeros_like(p)
            st["step"] += 1
            t = float(st["step"])
            weight = t**float(group["beta2_decay"])
            numel = max(1, math.prod(shape))
            rms = math.sqrt(_scalar(ops, ops.sum(ops.mul(p._data, p._data), None, False)))
            alpha = max(float(eps2), rms / math.sqrt(numel)) * min(lr, 1.0 / math.sqrt(t))
            data = ops.mul(p._data, 1.0 - lr * wd) if wd else p._data
            square = ops.mul(g, g)
            if len(shape) > 1:
                rank = len(shape)
                row_mean = ops.div(ops.sum(square, (rank - 1,), True), float(shape[-1]))
                st["row_var"] = lerp(ops, st["row_var"], row_mean, weight)
                col_mean = ops.div(ops.sum(square, (rank - 2,), True), float(shape[-2]))
                st["col_var"] = lerp(ops, st["col_var"], col_mean, weight)
                estimate = ops.matmul(st["row_var"], st["col_var"])
                estimate = ops.div(estimate, ops.maximum(
                    ops.mean(st["row_var"], (rank - 2,), True), e1))
            else:
                st["variance"] = estimate = lerp(ops, st["variance"], square, weight)
            update = ops.div(g, ops.sqrt(ops.maximum(estimate, e1 * e1)))
            norm = math.sqrt(_scalar(ops, ops.sum(ops.mul(update, update), None, False)))
            denom = max(1.0, norm / (math.sqrt(numel) * d))
            new.append(ops.sub(data, ops.mul(update, alpha / denom)))
        store(params, new)
