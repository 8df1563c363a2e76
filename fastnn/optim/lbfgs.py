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
from fastnn.optim.line_search import strong_wolfe
from fastnn.optim.optimizer import Optimizer
from fastnn.optim.param_state import ParamState
from fastnn.optim.state import is_array


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
                    loss, flat_grad, t, ls_func_evals = strong_wolfe(
                        lambda x, step, direction: self._evaluate(closure, x, step, direction),
                        self._dot, self._abs_max, x_init, t, d, loss, flat_grad, gtd,
                        max_ls=max_eval - current_evals)
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

    # ------------------------------------------------------------ state in PyTorch's layout
    def state_dict(self) -> dict:
        """PyTorch's layout: the state under parameter 0, arrays as host NumPy copies."""
        out = {"state": {}, "param_groups": [{**{k: v for k, v in self.param_groups[0].items()
                                                 if k != "params"},
                                              "params": list(range(len(self._params)))}]}
        st = self.state.get(id(self._params[0]))
        if st:
            out["state"][0] = {k: self._host(v) for k, v in st.items()}  # (PyTorch's int key)
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
        self.state = ParamState(self, {id(p): state} if state else {})
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
