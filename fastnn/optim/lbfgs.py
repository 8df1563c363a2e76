"""L-BFGS as PyTorch's ``torch.optim.LBFGS``: a closure re-evaluates the loss, the history of
the last ``history_size`` steps gives the quasi-Newton direction (two-loop recursion), and
``line_search_fn="strong_wolfe"`` picks the step length by a cubic-interpolating line search
under the strong Wolfe conditions (c1 1e-4, c2 0.9), or the step is ``lr`` (the first one
scaled by 1 / |g|_1) without one.

A composite of the backend's primitives, without a fused hook: every iteration needs the
closure (a forward and backward pass), and a handful of dot products, which dominate nothing.
The flat vectors (direction, previous gradient, history) live on the parameters' device;
the scalars (dot products, step lengths) are Python floats. Like PyTorch's it takes one
parameter group, and keeps its state under the first parameter (``state_dict()`` in
PyTorch's layout: ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
``prev_flat_grad``, ``prev_loss``, ``func_evals``, ``n_iter``, ``al``).
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.autograd.grad_mode import enable_grad, no_grad
from fastnn.ops.storage import rebind
from fastnn.optim.optimizer import Optimizer
from fastnn.optim.state import is_array


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), kept in ``bounds``
    (by default the interval), or the interval's middle when the cubic has none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(pos, low), high)
    return (low + high) / 2.0


class LBFGS(Optimizer):
    """L-BFGS (lr 1, max_iter 20, max_eval max_iter * 5 // 4, tolerance_grad 1e-7,
    tolerance_change 1e-9, history_size 100, line_search_fn None or "strong_wolfe");
    ``step(closure)`` runs up to ``max_iter`` iterations and returns the first loss."""

    STATE_KEYS = None

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval=None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: no per-parameter options (parameter groups); give one "
                             "list of parameters, as PyTorch's")
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, group: dict) -> None:
        """Only the constructor's one group, as PyTorch's LBFGS."""
        if self.param_groups:
            raise ValueError("LBFGS: no per-parameter options (parameter groups)")
        super().add_param_group(group)

    def _check_rule(self, group):
        for name in ("max_iter", "max_eval", "history_size"):
            value = group[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LBFGS: {name} must be an integer >= 1, got {value!r}")
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{group['line_search_fn']!r}")

    def apply_gradients(self, pairs) -> None:
        raise TypeError("LBFGS needs a closure that re-evaluates the loss: call "
                        "optimizer.step(closure), not apply_gradients / Module.apply")

    # ------------------------------------------------------------ flat vectors
    @property
    def _ops(self):
        return self._params[0]._device.ops

    def _flat_grad(self):
        ops = self._ops
        parts = [ops.reshape(self.zeros_like(p) if p.grad is None else
                             p.grad.to(p.device).to(p.dtype)._data, (math.prod(p.shape),))
                 for p in self._params]
        return ops.cat(parts, 0) if len(parts) > 1 else ops.mul(parts[0], 1.0)

    def _add_grad(self, step: float, direction) -> None:
        ops, offset = self._ops, 0
        for p in self._params:
            n = math.prod(p.shape)
            piece = ops.reshape(ops.slice(direction, (offset,), (offset + n,), (1,)), p.shape)
            rebind(p, ops.add(p._data, ops.mul(piece, step)))
            offset += n

    def _dot(self, a, b) -> float:
        return float(np.asarray(self._ops.to_numpy(self._ops.sum(self._ops.mul(a, b), None,
                                                                  False))))

    def _abs_max(self, a) -> float:
        if not math.prod(a.shape):
            return 0.0
        return float(np.asarray(self._ops.to_numpy(self._ops.max(self._ops.abs(a), None,
                                                                  False))))

    def _evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = float(closure())
        flat = self._flat_grad()
        for p, data in zip(self._params, x):
            rebind(p, self._ops.mul(data, 1.0))
        return loss, flat

    # ------------------------------------------------------------ the step
    def step(self, closure):  # noqa: C901 - PyTorch's algorithm, kept in one piece
        """One L-BFGS step: up to ``max_iter`` iterations of ``closure`` (which must zero
        the gradients, compute the loss, call backward and return the loss)."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that re-evaluates the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        ops = self._ops
        for p in self._params:
            self._follow(p)
        state = self.state.setdefault(id(self._params[0]), {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        with no_grad():
            flat_grad = self._flat_grad()
            opt_cond = self._abs_max(flat_grad) <= tol_grad
            if opt_cond:
                return orig_loss
            d, t = state.get("d"), state.get("t")
            old_dirs, old_stps = state.get("old_dirs"), state.get("old_stps")
            ro, h_diag = state.get("ro"), state.get("H_diag")
            prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d = ops.neg(flat_grad)
                    old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
                else:
                    y = ops.sub(flat_grad, prev_flat_grad)
                    s = ops.mul(d, t)
                    ys = self._dot(y, s)
                    if ys > 1e-10:
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / self._dot(y, y)
                    al = state.setdefault("al", [None] * history_size)
                    if len(al) < history_size:
                        al.extend([None] * (history_size - len(al)))
                    q = ops.neg(flat_grad)
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = self._dot(old_stps[i], q) * ro[i]
                        q = ops.sub(q, ops.mul(old_dirs[i], al[i]))
                    d = r = ops.mul(q, h_diag)
                    for i in range(len(old_dirs)):
                        be_i = self._dot(old_dirs[i], r) * ro[i]
                        r = ops.add(r, ops.mul(old_stps[i], al[i] - be_i))
                    d = r
                prev_flat_grad = ops.mul(flat_grad, 1.0)
                prev_loss = loss
                if state["n_iter"] == 1:
                    total = float(np.asarray(ops.to_numpy(ops.sum(ops.abs(flat_grad), None,
                                                                  False))))
                    t = min(1.0, 1.0 / total) * lr
                else:
                    t = lr
                gtd = self._dot(flat_grad, d)
                if gtd > -tol_change:
                    break
                ls_func_evals = 0
                if group["line_search_fn"] is not None:
                    x_init = [ops.mul(p._data, 1.0) for p in self._params]
                    loss, flat_grad, t, ls_func_evals = self._strong_wolfe(
                        lambda x, step, direction: self._evaluate(closure, x, step, direction),
                        x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                    self._add_grad(t, d)
                    opt_cond = self._abs_max(flat_grad) <= tol_grad
                else:
                    self._add_grad(t, d)
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        flat_grad = self._flat_grad()
                        opt_cond = self._abs_max(flat_grad) <= tol_grad
                        ls_func_evals = 1
                current_evals += ls_func_evals
                state["func_evals"] += ls_func_evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if self._abs_max(ops.mul(d, t)) <= tol_change:
                    break
                if abs(loss - prev_loss) < tol_change:
                    break
            state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                         prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _strong_wolfe(self, obj, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, max_ls=25):
        """PyTorch's strong Wolfe line search: (loss, flat gradient, step, evaluations)."""
        tolerance_change = 1e-9
        d_norm = self._abs_max(d)
        f_new, g_new = obj(x, t, d)
        evals, gtd_new = 1, self._dot(g_new, d)
        t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
        done, ls_iter = False, 0
        while ls_iter < max_ls:
            if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
                bracket, bracket_f = [t_prev, t], [f_prev, f_new]
                bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
                break
            if abs(gtd_new) <= -c2 * gtd:
                bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
                done = True
                break
            if gtd_new >= 0:
                bracket, bracket_f = [t_prev, t], [f_prev, f_new]
                bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
                break
            low, high = t + 0.01 * (t - t_prev), t * 10
            t_prev, t = t, cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                             bounds=(low, high))
            f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
            f_new, g_new = obj(x, t, d)
            evals += 1
            gtd_new = self._dot(g_new, d)
            ls_iter += 1
        if ls_iter == max_ls:
            bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
        insuf_progress = False
        low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
        while not done and ls_iter < max_ls:
            if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
                break
            t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                                  bracket_f[1], bracket_gtd[1])
            eps = 0.1 * (max(bracket) - min(bracket))
            if min(max(bracket) - t, t - min(bracket)) < eps:
                if insuf_progress or t >= max(bracket) or t <= min(bracket):
                    if abs(t - max(bracket)) < abs(t - min(bracket)):
                        t = max(bracket) - eps
                    else:
                        t = min(bracket) + eps
                    insuf_progress = False
                else:
                    insuf_progress = True
            else:
                insuf_progress = False
            f_new, g_new = obj(x, t, d)
            evals += 1
            gtd_new = self._dot(g_new, d)
            ls_iter += 1
            if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
                bracket[high_pos], bracket_f[high_pos] = t, f_new
                bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
                low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
            else:
                if abs(gtd_new) <= -c2 * gtd:
                    done = True
                elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                    bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                    bracket_g[high_pos] = bracket_g[low_pos]
                    bracket_gtd[high_pos] = bracket_gtd[low_pos]
                bracket[low_pos], bracket_f[low_pos] = t, f_new
                bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new
        return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], evals

    # ------------------------------------------------------------ state in PyTorch's layout
    def state_dict(self) -> dict:
        """PyTorch's layout: the state under parameter 0, arrays as host NumPy copies."""
        out = {"param_groups": [{**{k: v for k, v in self.param_groups[0].items()
                                     if k != "params"},
                                  "params": list(range(len(self._params)))}], "state": {}}
        st = self.state.get(id(self._params[0]))
        if st:
            out["state"]["0"] = {k: self._host(v) for k, v in st.items()}
        return out

    def _host(self, value):
        if isinstance(value, list):
            return [self._host(v) for v in value]
        if is_array(value):
            return np.array(self._ops.to_numpy(value), copy=True)
        return value

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state saved by :meth:`state_dict` or by PyTorch's LBFGS."""
        groups = state_dict.get("param_groups") if isinstance(state_dict, dict) else None
        if not isinstance(groups, (list, tuple)) or len(groups) != 1:
            raise ValueError("LBFGS.load_state_dict: expected the dict state_dict() returned, "
                             "with one param group")
        if len(groups[0]["params"]) != len(self._params):
            raise ValueError(f"LBFGS.load_state_dict: saved group holds "
                             f"{len(groups[0]['params'])} parameters, this one "
                             f"{len(self._params)}")
        entry = dict(self.param_groups[0])
        entry.update({k: v for k, v in groups[0].items() if k != "params"})
        self._check_rule(entry)
        p = self._params[0]
        state = {}
        for key, saved in state_dict.get("state", {}).items():
            if int(key) != 0:
                raise ValueError("LBFGS.load_state_dict: LBFGS keeps its state under "
                                 f"parameter 0, got parameter {key}")
            state = {k: self._device_value(v, p) for k, v in saved.items()}
        self.param_groups[0].update(entry)
        self.state = {id(p): state} if state else {}
        self._state_home = {id(q): (q._device, q._dtype) for q in self._params}

    def _device_value(self, value, p):
        if isinstance(value, (list, tuple)):
            return [self._device_value(v, p) for v in value]
        if value is None or isinstance(value, (int, float)):
            return value
        host = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        if host.ndim == 0:
            return host.item()
        return p._device.ops.from_numpy(np.asarray(host, p._dtype.numpy), p._device.index)
