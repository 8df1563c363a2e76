"""An optimizer's state dict: ``state_dict()`` as host arrays and numbers, and a
``load_state_dict()`` that checks everything before it changes anything.

A rule names the per-parameter entries it keeps (``STATE_KEYS``, or ``state_keys(group)``
where they depend on its options); a saved state with other entries (another
optimizer's), a step that is not a count, or an array of the wrong shape or kind is
refused at load, naming the parameter and the entry, instead of failing at the next
``step()``.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api import dtypes
from fastnn.ops.tensor import Tensor
from fastnn.optim.param_state import ParamState, is_array


class OptimizerState:
    """The state-dict half of :class:`~fastnn.optim.optimizer.Optimizer` (a mixin)."""

    def state_keys(self, group: dict) -> tuple | None:
        """The state entries this rule keeps for a parameter of ``group`` (default
        STATE_KEYS); a rule whose entries depend on its options overrides this."""
        return self.STATE_KEYS

    #: State entries that hold a number rather than an array: name -> int or float
    SCALAR_STATE = {"step": int, "mu_product": float, "eta": float, "mu": float}

    def _rule_state_keys(self, group: dict) -> tuple | None:
        """The state keys of the class whose ``_update`` runs, or of a subclass below it."""
        for cls in type(self).__mro__:
            if "state_keys" in cls.__dict__:
                return cls.__dict__["state_keys"](self, group)
            if "STATE_KEYS" in cls.__dict__:
                return cls.__dict__["STATE_KEYS"]
            if "_update" in cls.__dict__:
                return None  # a rule of its own that declares no keys: not checked
        return None

    def _check_state_keys(self, key, st, group) -> None:
        keys = self._rule_state_keys(group)
        if keys is None or not st:
            return
        owner = type(self).__name__
        if set(st) != set(keys):
            raise ValueError(
                f"{owner}.load_state_dict: parameter {key} has state {sorted(st)}, but {owner} "
                f"keeps {sorted(keys)} (was it saved from another optimizer?)"
            )

    def _all_params(self) -> list:
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict:
        """{"state": {i: {...}}, "param_groups": [hyper-parameters + param indices]}, in
        PyTorch's key order, the state keyed by the parameter's int index, as PyTorch's
        (``load_state_dict`` also takes the "i" strings that fastnn wrote before).

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
                state[i] = {k: (np.array(ops.to_numpy(v), copy=True)
                                if is_array(v) else v) for k, v in st.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and per-parameter state saved by :meth:`state_dict`.

        Everything is checked before anything changes: a state that would fail at the
        next ``step()`` (a missing or foreign entry, a wrong shape, a step that is not a
        count) is refused here, naming the parameter and the entry.
        """
        owner = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"{owner}: expected the dict that state_dict() returned, got "
                f"{type(state_dict).__name__}; pass optimizer.state_dict() (or the 'optimizer' "
                "entry of a checkpoint)"
            )
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise ValueError(f"{owner}: expected keys 'param_groups' and 'state', got "
                             f"{sorted(state_dict)}")
        if not isinstance(groups, (list, tuple)) or not all(
                isinstance(g, dict) and "params" in g for g in groups):
            raise ValueError(f"{owner}: 'param_groups' must be a list of dicts with 'params' "
                             f"(as state_dict() gives), got {groups!r:.200}")
        if not isinstance(state_dict["state"], dict):
            raise ValueError(f"{owner}: 'state' must be a dict of parameter index -> state, got "
                             f"{type(state_dict['state']).__name__}")
        sizes = [len(g["params"]) for g in self.param_groups]
        saved_sizes = [len(np.atleast_1d(g["params"])) for g in groups]
        if sizes != saved_sizes:
            raise ValueError(f"{owner}: saved groups hold {saved_sizes} parameters, this "
                             f"optimizer {sizes}")
        merged = []
        for group, saved in zip(self.param_groups, groups):
            entry = dict(group)
            for k, v in saved.items():
                if k != "params":
                    entry[k] = (dict(v) if isinstance(v, dict) else list(v)
                                if k == "param_names" else as_number(v))
            self._check_hyper(entry)  # a bad saved value fails here, before anything changes
            merged.append(entry)
        params = self._all_params()
        group_of = [entry for entry, g in zip(merged, self.param_groups) for _ in g["params"]]
        new_state = {}
        for key, st in state_dict["state"].items():
            if not (str(key).isdigit() and int(key) < len(params)):
                raise ValueError(
                    f"{owner}: state for parameter {key!r}, but this optimizer holds "
                    f"{len(params)} parameters (was it saved from another model?)"
                )
            if not isinstance(st, dict):
                raise ValueError(f"{owner}: the state of parameter {key} must be a dict, got "
                                 f"{type(st).__name__}")
            p = params[int(key)]
            self._check_state_keys(key, st, group_of[int(key)])
            strict = self._rule_state_keys(group_of[int(key)]) is not None
            new_state[id(p)] = {name: self._state_value(owner, key, name, value, p, strict)
                                for name, value in st.items()}
        for group, entry in zip(self.param_groups, merged):
            group.update(entry)
        self.state = ParamState(self, new_state)
        self._state_home = {id(p): (p._device, p._dtype) for p in params}

    # ------------------------------------------------------------ pickle and deepcopy
    def __getstate__(self) -> dict:
        """The optimizer for pickle and ``copy.deepcopy``: its state is keyed by ``id(param)``,
        which a copy does not keep, so it travels keyed by the parameter's position, with
        host copies of the arrays (unpickled onto the parameter's device)."""
        out = dict(self.__dict__)
        params = self._all_params()
        out["state"] = {
            i: {k: (np.array(self._home(p)[0].ops.to_numpy(v), copy=True) if is_array(v) else v)
                for k, v in self.state[id(p)].items()}
            for i, p in enumerate(params) if id(p) in self.state}
        out["_state_home"] = None
        return out

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        params = self._all_params()
        by_index = self.state
        self.state = ParamState(self)
        for i, st in by_index.items():
            p = params[i]
            self.state[id(p)] = {k: (p._device.ops.from_numpy(np.asarray(v, p._dtype.numpy),
                                                               p._device.index)
                                     if is_array(v) else v) for k, v in st.items()}
        self._state_home = {id(p): (p._device, p._dtype) for p in params}

    def _home(self, p) -> tuple:
        """(device, dtype) that ``p``'s state arrays live in."""
        return self._state_home.get(id(p), (p._device, p._dtype))

    def _state_value(self, owner: str, key, name: str, value, p, strict: bool):
        """One saved state entry, checked and placed on ``p``'s device (``strict``: the
        rule's own entries, each a number or an array of the parameter's shape)."""
        kind = self.SCALAR_STATE.get(name)
        if kind is not None:
            number = value.numpy() if isinstance(value, Tensor) else value
            number = np.asarray(number)
            if number.size != 1 or number.dtype.kind not in "biuf":
                raise ValueError(f"{owner}: state {name!r} of parameter {key} must be a number, "
                                 f"got {value!r:.100}")
            number = number.item()
            if kind is int and not (float(number).is_integer() and number >= 0):
                raise ValueError(f"{owner}: state {name!r} of parameter {key} must be a step "
                                 f"count (an integer >= 0), got {number!r}")
            if not math.isfinite(number):
                raise ValueError(f"{owner}: state {name!r} of parameter {key} is {number}")
            return kind(number)
        if not isinstance(value, (np.ndarray, Tensor)) and hasattr(value, "__array__"):
            value = np.asarray(value)  # a torch tensor from torch's optimizer.state_dict()
        if not isinstance(value, (np.ndarray, Tensor)):
            if strict:
                raise ValueError(f"{owner}: state {name!r} of parameter {key} must be an array "
                                 f"of the parameter's shape {p.shape}, got {value!r:.100}")
            return as_number(value)
        host = value.numpy() if isinstance(value, Tensor) else value
        if tuple(host.shape) != p.shape:
            raise ValueError(f"{owner}: state {name!r} of parameter {key} has shape "
                             f"{tuple(host.shape)}, the parameter {p.shape}")
        if not dtypes.holds_numbers(host.dtype):
            raise ValueError(f"{owner}: state {name!r} of parameter {key} holds {host.dtype} "
                             "values, not numbers")
        host = np.asarray(host, dtype=p._dtype.numpy)
        return p._device.ops.from_numpy(host, p._device.index)


def as_number(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return tuple(value)
    return value
