"""The optimizer base: parameter groups, parameter classes, state, and explicit-gradient updates.

An optimizer holds parameter groups (PyTorch style: ``params`` is a list of
tensors or a list of dicts ``{"params": [...], "lr": ...}``) and per-parameter
state. Two ways to update:

- ``step()``: uses each parameter's ``.grad`` (tape training);
- ``apply_gradients(pairs)``: uses explicit ``(parameter, gradient)`` pairs
  (reversible training: ``Module.apply`` calls it).

Both end in :meth:`Optimizer._update`, which a rule implements by calling the
backend's fused hook (``sgd_step``, ``adam_step``, ``rmsprop_step``) once per
group of parameters that share a state phase, and stores the returned arrays
back into the parameters and the state.

Parameter classes: a :class:`~fastnn.nn.Parameter` carries ``param_class``
(connective, bias, activation, other); a plain tensor counts as "other".
Weight decay applies to connective parameters only, and ``class_lr`` (e.g.
``{"bias": 2.0}``) multiplies the learning rate of a class.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import real as check_number
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.module import PARAM_CLASSES
from fastnn.ops.tensor import Tensor, tensor

DECAYED_CLASSES = ("connective",)


def param_class(p) -> str:
    return getattr(p, "param_class", "other")


class Optimizer:
    """Base class; a rule sets ``defaults`` and implements ``_update(group, params, grads)``."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict[int, dict] = {}  # id(param) -> that parameter's state
        # id(param) -> (device, dtype) its state arrays live in; a parameter that
        # moved since (model.to() after some steps) takes its state along
        self._state_home: dict[int, tuple] = {}
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add ``{"params": [...], "lr": ...}``: its own hyper-parameters, the defaults for
        the rest (as PyTorch's)."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{type(self).__name__}: a param group must be a dict with 'params'")
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown options {sorted(unknown)}")
        params = list(group["params"])
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor) or not p.dtype.is_floating:
                raise TypeError(
                    f"{type(self).__name__}: parameters must be floating-point Tensors, got "
                    f"{type(p).__name__}"
                )
            if id(p) in seen:
                raise ValueError(f"{type(self).__name__}: a parameter appears in two groups")
            seen.add(id(p))
        full = {**self.defaults, **group, "params": params}
        full["class_lr"] = dict(full.get("class_lr") or {})
        self._check_hyper(full)
        self.param_groups.append(full)

    #: The per-parameter state entries a rule keeps, all of them once it has stepped
    #: (None: not checked). load_state_dict refuses others: another optimizer's state.
    #: They belong to the ``_update`` beside them: a subclass that overrides ``_update``
    #: (and may keep more state) is checked only against STATE_KEYS of its own.
    STATE_KEYS: tuple | None = None

    # hyper-parameter -> its closed range, checked for every group, whether it comes from
    # the constructor, add_param_group or load_state_dict
    RANGES = {"lr": (0.0, math.inf), "weight_decay": (0.0, math.inf), "momentum": (0.0, math.inf),
              "dampening": (0.0, 1.0), "eps": (0.0, math.inf), "alpha": (0.0, 1.0)}

    def _check_hyper(self, group: dict) -> None:
        owner = type(self).__name__
        for name, (low, high) in self.RANGES.items():
            if name not in group:
                continue
            value = check_number(owner, name, group[name])
            if not low <= value <= high:
                bound = f">= {low:g}" if high == math.inf else f"in [{low:g}, {high:g}]"
                raise ValueError(f"{owner}: {name} must be {bound}, got {group[name]!r}")
        if "betas" in group:
            betas = group["betas"]
            if not isinstance(betas, (tuple, list)) or len(betas) != 2:
                raise TypeError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
            if not all(0.0 <= check_number(owner, "betas", b) < 1.0 for b in betas):
                raise ValueError(f"{owner}: betas must be in [0, 1), got {betas}")
        class_lr = group["class_lr"]
        unknown = sorted(set(class_lr) - set(PARAM_CLASSES))
        if unknown:
            raise ValueError(
                f"{owner}: class_lr names unknown parameter classes {unknown}; "
                f"the classes are {', '.join(PARAM_CLASSES)}"
            )
        for name, scale in class_lr.items():
            if not check_number(owner, f"class_lr[{name!r}]", scale) >= 0:
                raise ValueError(f"{owner}: class_lr[{name!r}] must be >= 0, got {scale}")

    # ------------------------------------------------------------ updates
    def zero_grad(self) -> None:
        """Set the ``.grad`` of every parameter in every group to None."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self) -> None:
        """Update every parameter that has a ``.grad`` (others are skipped, as in PyTorch)."""
        pairs = [(p, p.grad) for g in self.param_groups for p in g["params"] if p.grad is not None]
        self.apply_gradients(pairs)

    def apply_gradients(self, pairs) -> None:
        """Update from explicit ``(parameter, gradient)`` pairs; each parameter must be ours."""
        where = {id(p): i for i, g in enumerate(self.param_groups) for p in g["params"]}
        per_group: dict[tuple, tuple[list, list]] = {}
        for p, g in pairs:
            index = where.get(id(p))
            if index is None:
                raise ValueError(
                    f"{type(self).__name__}: got a gradient for a parameter of shape {p.shape} "
                    "that this optimizer does not hold; build it with model.parameters()"
                )
            if not isinstance(g, Tensor):  # a host array or list: onto the parameter's device
                g = tensor(g, dtype=p.dtype, device=p.device)
            grad = g._data
            if tuple(grad.shape) != p.shape:
                raise ValueError(
                    f"{type(self).__name__}: gradient shape {tuple(grad.shape)} does not match "
                    f"parameter shape {p.shape}"
                )
            if g.dtype is not p.dtype or g.device != p.device:
                grad = g.to(p.device).to(p.dtype)._data
            # one hook call per (group, device): a model split over devices updates each part
            # with its own backend
            params, grads = per_group.setdefault((index, p._device), ([], []))
            params.append(p)
            grads.append(grad)
        for params, _ in per_group.values():
            for p in params:
                self._follow(p)
        with no_grad():
            for (index, _), (params, grads) in per_group.items():
                self._update(self.param_groups[index], params, grads)

    def _rule_state_keys(self) -> tuple | None:
        """STATE_KEYS of the class whose ``_update`` runs, or of a subclass below it."""
        for cls in type(self).__mro__:
            if "STATE_KEYS" in cls.__dict__:
                return cls.__dict__["STATE_KEYS"]
            if "_update" in cls.__dict__:
                return None  # a rule of its own that declares no keys: not checked
        return None

    def _check_state_keys(self, key, st) -> None:
        keys = self._rule_state_keys()
        if keys is None or not st:
            return
        owner = type(self).__name__
        if set(st) != set(keys):
            raise ValueError(
                f"{owner}.load_state_dict: parameter {key} has state {sorted(st)}, but {owner} "
                f"keeps {sorted(keys)} (was it saved from another optimizer?)"
            )

    def _follow(self, p) -> None:
        """Move ``p``'s state to ``p``'s device and dtype when the parameter moved since its
        last update (through the host: this happens once per move, not per step)."""
        home = (p._device, p._dtype)
        old = self._state_home.get(id(p))
        if old is not None and old != home:
            st = self.state.get(id(p), {})
            for name, value in st.items():
                if _is_array(value):
                    host = np.asarray(old[0].ops.to_numpy(value), dtype=p._dtype.numpy)
                    st[name] = p._device.ops.from_numpy(host, p._device.index)
        self._state_home[id(p)] = home

    def _update(self, group: dict, params: list, grads: list) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ helpers for rules
    @staticmethod
    def lrs_and_decays(group: dict, params: list) -> tuple[list, list]:
        """Per-parameter learning rates (times class_lr) and weight decays (connective only)."""
        scale = group["class_lr"]
        lrs = [group["lr"] * scale.get(param_class(p), 1.0) for p in params]
        wd = group.get("weight_decay", 0.0)
        decays = [wd if param_class(p) in DECAYED_CLASSES else 0.0 for p in params]
        return lrs, decays

    @staticmethod
    def zeros_like(p):
        """Backend data of zeros with the shape, dtype and device of parameter ``p`` (state)."""
        return p._device.ops.full(p.shape, 0, p._dtype.name, p._device.index)

    # ------------------------------------------------------------ state dicts
    def _all_params(self) -> list:
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict:
        """{"param_groups": [hyper-parameters + param indices], "state": {"i": {...}}}.

        Arrays come back as host NumPy copies, so the dict can go to ``fnn.save``.
        """
        groups, start = [], 0
        for g in self.param_groups:
            entry = {k: (dict(v) if isinstance(v, dict) else v) for k, v in g.items()
                     if k != "params"}
            entry["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(entry)
        state = {}
        for i, p in enumerate(self._all_params()):
            st = self.state.get(id(p))
            if st:
                ops = self._state_home.get(id(p), (p._device,))[0].ops
                state[str(i)] = {k: (np.array(ops.to_numpy(v), copy=True)
                                     if _is_array(v) else v) for k, v in st.items()}
        return {"param_groups": groups, "state": state}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and per-parameter state saved by :meth:`state_dict`."""
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"{type(self).__name__}.load_state_dict: expected the dict that state_dict() "
                f"returned, got {type(state_dict).__name__}"
            )
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: expected keys 'param_groups' and "
                f"'state', got {sorted(state_dict)}"
            )
        sizes = [len(g["params"]) for g in self.param_groups]
        saved_sizes = [len(g["params"]) for g in groups]
        if sizes != saved_sizes:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: saved groups hold {saved_sizes} "
                f"parameters, this optimizer {sizes}"
            )
        params = self._all_params()
        new_state = {}
        for key, st in state_dict["state"].items():
            if not (str(key).isdigit() and int(key) < len(params)):
                raise ValueError(
                    f"{type(self).__name__}.load_state_dict: state for parameter {key!r}, but "
                    f"this optimizer holds {len(params)} parameters (was it saved from another "
                    f"model?)"
                )
            p = params[int(key)]
            self._check_state_keys(key, st)
            entry = {}
            for name, value in st.items():
                if isinstance(value, (np.ndarray, Tensor)):
                    host = value.numpy() if isinstance(value, Tensor) else value
                    if tuple(host.shape) != p.shape:
                        raise ValueError(
                            f"{type(self).__name__}.load_state_dict: state {name!r} of parameter "
                            f"{key} has shape {tuple(host.shape)}, the parameter {p.shape}"
                        )
                    host = np.asarray(host, dtype=p._dtype.numpy)
                    entry[name] = p._device.ops.from_numpy(host, p._device.index)
                else:
                    entry[name] = _number(value)
            new_state[id(p)] = entry
        merged = []
        for group, saved in zip(self.param_groups, groups):
            entry = dict(group)
            for k, v in saved.items():
                if k != "params":
                    entry[k] = dict(v) if isinstance(v, dict) else _number(v)
            self._check_hyper(entry)  # a bad saved value fails here, before anything changes
            merged.append(entry)
        for group, entry in zip(self.param_groups, merged):
            group.update(entry)
        self.state = new_state
        self._state_home = {id(p): (p._device, p._dtype) for p in params}


def _is_array(value) -> bool:
    return hasattr(value, "shape") and not isinstance(value, (int, float))


def _number(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return tuple(value)
    return value


def clip_grad_norm(params, max_norm: float, eps: float = 1e-6) -> float:
    """Scale the ``.grad`` of ``params`` so their joint L2 norm is at most ``max_norm``.

    As PyTorch's ``clip_grad_norm_``: total = sqrt(sum ||g||^2); when
    total > max_norm every gradient is multiplied by max_norm / (total + eps) (a NaN
    total makes every gradient NaN, as there). Returns the total norm before clipping,
    as a float: one read-back per device.
    """
    # a list: a generator (e.g. ``p for p in ... if ...``) is walked twice below
    try:
        params = [params] if isinstance(params, Tensor) else list(params)
    except TypeError:
        params = None
    if params is None or not all(isinstance(p, Tensor) for p in params):
        raise TypeError("clip_grad_norm: params must be tensors; pass model.parameters()")
    max_norm = check_number("clip_grad_norm", "max_norm", max_norm)
    if not max_norm >= 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm}")
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    with no_grad():
        # one sum of squares per device, read back once each (not once per parameter: on a
        # GPU every read-back waits for the device)
        per_device: dict = {}
        for g in grads:
            if g.dtype.itemsize < 4:
                # NOTE: float16 squares overflow past 65504 (a norm of 256): sum in float32
                g = g.to(dtypes.float32)
            square = (g * g).sum()
            prev = per_device.get(g._device)
            per_device[g._device] = square if prev is None else prev + square
        total = math.sqrt(sum(float(s.item()) for s in per_device.values()))
    coef = float(max_norm) / (total + eps)
    # "not <" so that a NaN norm makes NaN gradients, as in PyTorch, instead of passing
    # them on unclipped (an infinite one gives coef 0)
    if not coef >= 1.0:
        with no_grad():
            for p in params:
                if p.grad is not None:
                    p.grad = p.grad * coef
    return total
