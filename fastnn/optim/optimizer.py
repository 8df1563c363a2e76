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
Weight decay applies to every parameter of its group, as in PyTorch;
``decay_classes=("connective",)`` (minidx's rule, which ``fastnn train`` uses)
restricts it to the parameters of those classes. ``class_lr`` (e.g.
``{"bias": 2.0}``) multiplies the learning rate of a class, and ``l1`` (minidx's
L1 term) adds ``l1 * sign(p)`` to the gradient of connective parameters before
the rule runs, as ``weight_decay`` adds ``wd * p``.

The decay reaches a backend's fused hook as one weight decay per parameter (0.0
for a parameter left out), so the hooks need not know about classes.
"""

from __future__ import annotations

import difflib
import math
import warnings

import numpy as np

from fastnn.api.args import real as check_number
from fastnn.autograd.grad_mode import enable_grad, no_grad
from fastnn.nn.module import PARAM_CLASSES
from fastnn.nn.uninitialized import is_uninitialized
from fastnn.ops.tensor import Tensor, tensor
from fastnn.optim.param_state import ParamState
from fastnn.optim.state import OptimizerState, is_array
from fastnn.optim.step_hooks import (
    StepHooks,
    with_load_hooks,
    with_state_dict_hooks,
    with_step_hooks,
)

L1_CLASSES = ("connective",)
"""The parameter classes minidx's ``l1`` term applies to."""


def param_class(p) -> str:
    return getattr(p, "param_class", "other")


# fastnn's own group options at their defaults: not printed, so a repr reads as PyTorch's
_UNSET_EXTRAS = {"class_lr": {}, "decay_classes": None, "l1": 0.0}

class Optimizer(StepHooks, OptimizerState):
    """Base class; a rule sets ``defaults`` and implements ``_update(group, params, grads)``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # its own step runs the step hooks too
            cls.step = with_step_hooks(cls.__dict__["step"])
        if "state_dict" in cls.__dict__:  # and its own state_dict the state-dict hooks
            cls.state_dict = with_state_dict_hooks(cls.__dict__["state_dict"])
        if "load_state_dict" in cls.__dict__:
            cls.load_state_dict = with_load_hooks(cls.__dict__["load_state_dict"])

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        # id(param) -> that parameter's state; state[param] gives it as tensors (PyTorch's)
        self.state = ParamState(self)
        # id(param) -> (device, dtype) its state arrays live in; a parameter that
        # moved since (model.to() after some steps) takes its state along
        self._state_home: dict[int, tuple] = {}
        params = _param_list(type(self).__name__, "params", params)
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
        _warn_misspelt(type(self).__name__, set(group) - set(self.defaults) - _GROUP_KEYS,
                       self.defaults)
        params = group["params"]  # one tensor alone is a group of one, as in PyTorch
        if isinstance(params, (set, frozenset)):  # refused as PyTorch refuses it
            raise TypeError(f"{type(self).__name__}: a param group's 'params' must be an "
                            "ordered collection (a list), got a set: its order changes between "
                            "runs, and with it which state belongs to which parameter")
        params = _param_list(type(self).__name__, "a param group's 'params'",
                             [params] if isinstance(params, Tensor) else params)
        params, names = _split_names(type(self).__name__, params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if is_uninitialized(p):
                raise ValueError(
                    f"{type(self).__name__}: a parameter is an UninitializedParameter (a lazy "
                    "module, e.g. nn.LazyLinear, before its first forward); run a dry-run "
                    "forward with an input of the right shape first, then build the optimizer "
                    "(model(x); opt = fnn.optim.SGD(model.parameters(), ...)), as PyTorch asks")
            if not isinstance(p, Tensor) or not p.dtype.is_floating:
                raise TypeError(
                    f"{type(self).__name__}: parameters must be floating-point Tensors, got "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf and not _differentiable(self.defaults, group):
                raise ValueError(
                    f"{type(self).__name__}: can't optimize a non-leaf Tensor (a parameter of "
                    f"shape {p.shape} is the result of an op on the tape); pass the leaf "
                    "tensors (model.parameters(), or x.detach().requires_grad_()), as PyTorch "
                    "asks")
            if id(p) in seen:
                raise ValueError(f"{type(self).__name__}: a parameter of shape {p.shape} is "
                                 "given twice (in one group or in two); give each once")
            seen.add(id(p))
        full = {**self.defaults, **group, "params": params}
        if names:
            full["param_names"] = names
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
              "dampening": (0.0, 1.0), "eps": (0.0, math.inf), "alpha": (0.0, 1.0),
              "l1": (0.0, math.inf), "lr_decay": (0.0, math.inf),
              "initial_accumulator_value": (0.0, math.inf), "momentum_decay": (0.0, math.inf)}
    # switches, which must be True or False (a string "False" would read as on)
    FLAGS = ("nesterov", "amsgrad", "centered", "decoupled_weight_decay", "maximize",
             "capturable", "differentiable")

    def _check_hyper(self, group: dict) -> None:
        owner = type(self).__name__
        for name, (low, high) in self.RANGES.items():
            if name not in group:
                continue
            value = check_number(owner, name, group[name])
            if not low <= value <= high:
                bound = f">= {low:g}" if high == math.inf else f"in [{low:g}, {high:g}]"
                raise ValueError(f"{owner}: {name} must be {bound}, got {group[name]!r}")
        for name in self.FLAGS:
            if name in group and not isinstance(group[name], (bool, np.bool_)):
                raise TypeError(f"{owner}: {name} must be True or False, got {group[name]!r}")
        for name in ("foreach", "fused"):  # PyTorch's implementation switches: accepted
            if group.get(name) is not None and not isinstance(group[name], bool):
                raise TypeError(f"{owner}: {name} must be None, True or False, got "
                                f"{group[name]!r}")
        if "betas" in group:
            betas = group["betas"]
            if not isinstance(betas, (tuple, list)) or len(betas) != 2:
                raise TypeError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
            if not all(0.0 <= check_number(owner, "betas", b) < 1.0 for b in betas):
                raise ValueError(f"{owner}: betas must be in [0, 1), got {betas}; e.g. "
                                 "betas=(0.9, 0.999)")
            group["betas"] = tuple(float(b) for b in betas)
        self._check_rule(group)
        group["decay_classes"] = decay_classes(owner, group.get("decay_classes"))
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

    def _check_rule(self, group: dict) -> None:
        """A rule's own checks of a complete group (e.g. SGD's Nesterov conditions)."""

    # ------------------------------------------------------------ updates
    def __repr__(self) -> str:
        """As PyTorch prints an optimizer: each group's options, sorted (fastnn's own
        options ``class_lr``, ``decay_classes`` and ``l1`` only where set)."""
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params" and group[key] != _UNSET_EXTRAS.get(key, ()):
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every ``.grad`` (PyTorch's default), or fill it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = Tensor._make(self.zeros_like(p), p._dtype, p._device)

    def step(self, closure=None):
        """Update every parameter that has a ``.grad`` (others are skipped, as in PyTorch).

        ``closure``: a function that recomputes the loss (with gradients) and returns it,
        as PyTorch's; step returns that loss.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        pairs = [(p, p.grad) for g in self.param_groups for p in g["params"] if p.grad is not None]
        self._apply_pairs(pairs)
        return loss

    def apply_gradients(self, pairs) -> None:
        """Update from explicit ``(parameter, gradient)`` pairs; each parameter must be ours."""
        self._apply_pairs(_checked_pairs(type(self).__name__, pairs))

    def _apply_pairs(self, pairs) -> None:
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
                group = self.param_groups[index]
                self._update(group, params, self._add_l1(group, params, grads))

    @staticmethod
    def _add_l1(group: dict, params: list, grads: list) -> list:
        """grad + l1 * sign(p) for connective parameters (minidx's L1 term), the gradient
        negated first in a ``maximize`` group (PyTorch's order: weight decay and the l1
        term are added to the negated gradient)."""
        if group.get("maximize"):
            grads = [p._device.ops.neg(g) for p, g in zip(params, grads)]
        l1 = float(group.get("l1", 0.0))
        if not l1:
            return grads
        out = []
        for p, g in zip(params, grads):
            if param_class(p) in L1_CLASSES:
                ops = p._device.ops
                g = ops.add(g, ops.mul(ops.sign(p._data), l1))
            out.append(g)
        return out

    def _follow(self, p) -> None:
        """Move ``p``'s state to ``p``'s device and dtype when the parameter moved since its
        last update (through the host: this happens once per move, not per step)."""
        home = (p._device, p._dtype)
        old = self._state_home.get(id(p))
        if old is not None and old != home:
            st = self.state.get(id(p), {})
            for name, value in st.items():
                if is_array(value):
                    host = np.asarray(old[0].ops.to_numpy(value), dtype=p._dtype.numpy)
                    st[name] = p._device.ops.from_numpy(host, p._device.index)
        self._state_home[id(p)] = home

    def _update(self, group: dict, params: list, grads: list) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ helpers for rules
    @staticmethod
    def lrs_and_decays(group: dict, params: list) -> tuple[list, list]:
        """Per-parameter learning rates (times class_lr) and weight decays: the group's
        ``weight_decay`` for every parameter, or only for those whose class is in
        ``decay_classes`` when the group names some (0.0 for the others)."""
        scale, lr = group["class_lr"], group["lr"] * 1.0
        # (lr * 1.0 once: the parameters without a class scale share one float, not one
        # each; equal to lr * scale for every float and int lr)
        lrs = [lr if (m := scale.get(param_class(p))) is None else lr * m for p in params]
        wd = group.get("weight_decay", 0.0)
        only = group.get("decay_classes")
        if only is None:
            return lrs, [wd] * len(params)
        return lrs, [wd if param_class(p) in only else 0.0 for p in params]

    @staticmethod
    def zeros_like(p):
        """Backend data of zeros with the shape, dtype and device of parameter ``p`` (state)."""
        return p._device.ops.full(p.shape, 0, p._dtype.name, p._device.index)

def decay_classes(owner: str, value) -> tuple | None:
    """``decay_classes`` checked: None (weight decay on every parameter, PyTorch's rule) or
    a tuple of parameter classes (one class name alone counts as a tuple of one)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    try:
        value = tuple(value)
    except TypeError:
        raise TypeError(f"{owner}: decay_classes must be None or a tuple of parameter classes "
                        f"such as ('connective',), got {value!r}") from None
    unknown = [c for c in value if c not in PARAM_CLASSES]
    if unknown:
        raise ValueError(f"{owner}: decay_classes names unknown parameter classes {unknown}; "
                         f"the classes are {', '.join(PARAM_CLASSES)} (None: every parameter)")
    return value


# a group's keys that are no option: its parameters and (from named_parameters()) their names
_GROUP_KEYS = {"params", "param_names"}


def _warn_misspelt(owner: str, extra: set, options: dict) -> None:
    """PyTorch keeps a param group's extra keys (a "name", an "initial_lr" ...), unused, and
    so does fastnn; one spelt like an option of the rule is most likely a typo, so it warns."""
    for key in sorted(k for k in extra if isinstance(k, str)):
        close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.85)
        if close:
            warnings.warn(f"{owner}: param group key {key!r} is not one of its options (did "
                          f"you mean {close[0]!r}?); it is kept, unused, as PyTorch keeps it",
                          stacklevel=5)  # the caller of SGD(...) and the like


def _split_names(owner: str, params: list) -> tuple[list, list | None]:
    """``params`` and their names when they came as ``(name, tensor)`` pairs (PyTorch's
    ``model.named_parameters()``), else None."""
    named = [isinstance(p, tuple) for p in params]
    if not any(named):
        return params, None
    if not all(named) or not all(len(p) == 2 and isinstance(p[0], str) for p in params):
        raise ValueError(f"{owner}: all optimizer params should be with/without names "
                         "(model.named_parameters() gives (name, tensor) pairs); some param "
                         "names are missing")
    return [p for _, p in params], [name for name, _ in params]


def _param_list(owner: str, what: str, params) -> list:
    """``params`` as a list, refusing a bare tensor and anything not iterable, as PyTorch."""
    if isinstance(params, Tensor):
        raise TypeError(f"{owner}: {what} must be an iterable of Tensors (or of param-group "
                        f"dicts), got a single Tensor of shape {params.shape}; pass [tensor] "
                        "or model.parameters()")
    if isinstance(params, (str, bytes, dict)) or params is None:
        raise TypeError(f"{owner}: {what} must be an iterable of Tensors (or of param-group "
                        f"dicts), got {type(params).__name__}; pass model.parameters()")
    try:
        return list(params)
    except TypeError:
        raise TypeError(f"{owner}: {what} must be an iterable of Tensors (or of param-group "
                        f"dicts), got {type(params).__name__}; pass model.parameters()"
                        ) from None


def _checked_pairs(owner: str, pairs) -> list:
    """``pairs`` as a list of ``(parameter, gradient)`` tuples, or a TypeError that says what
    was given instead (unpacking it blindly said only "too many values to unpack")."""
    how = "pass a list of (parameter, gradient) pairs, e.g. zip(model.parameters(), grads)"
    if isinstance(pairs, (Tensor, dict, str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"{owner}.apply_gradients: expected (parameter, gradient) pairs, got "
                        f"{type(pairs).__name__} {_short(pairs)}; {how}")
    checked = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            what = (f"a {len(pair)}-item {type(pair).__name__}"
                    if isinstance(pair, (tuple, list)) else type(pair).__name__)
            raise TypeError(f"{owner}.apply_gradients: item {i} must be a (parameter, "
                            f"gradient) pair, got {what}; {how}")
        if not isinstance(pair[0], Tensor):
            raise TypeError(f"{owner}.apply_gradients: item {i} must start with a parameter "
                            f"(a Tensor), got {type(pair[0]).__name__}; {how}")
        if pair[1] is None:
            raise TypeError(f"{owner}.apply_gradients: item {i} has no gradient (None) for "
                            f"its parameter of shape {pair[0].shape}; leave the pair out")
        checked.append(tuple(pair))
    return checked


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


Optimizer.step = with_step_hooks(Optimizer.step)
Optimizer.state_dict = with_state_dict_hooks(Optimizer.state_dict)
Optimizer.load_state_dict = with_load_hooks(Optimizer.load_state_dict)


def _differentiable(defaults: dict, group: dict) -> bool:
    """Whether the group asks for a differentiable step (PyTorch then takes non-leaves)."""
    return bool(group.get("differentiable", defaults.get("differentiable", False)))
