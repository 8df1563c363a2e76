"""What a step reads and writes outside its arguments: tensors, gradients, optimizer state.

Before a recording, :class:`Snapshot` notes every live tensor's array and gradient and
every optimizer's state (one scan of the heap, once per recorded signature). After it,
the difference says which *locations* the step wrote (a parameter's array rebound by its
optimizer, a new ``.grad``, Adam's moments, a step count), and the arrays the program read
from outside are matched to the locations that held them. A replay reads its inputs from
those locations and writes its results back into them, as the eager step did.
"""

from __future__ import annotations

import gc
import numbers
import weakref

from fastnn.autograd import engine
from fastnn.nn.module import Module
from fastnn.ops.tensor import Tensor
from fastnn.optim.optimizer import Optimizer


class Snapshot:
    """The live tensors, modules and optimizers before a recorded call, and what they held."""

    def __init__(self):
        self.tensors, self.modules, self.optimizers = [], [], []
        kinds: dict = {}  # type -> which list its objects go to (None: none)
        lists = ((Tensor, self.tensors), (Module, self.modules), (Optimizer, self.optimizers))
        for obj in gc.get_objects():
            kind = type(obj)  # never obj.__class__: a proxy's __getattr__ could run
            found = kinds.get(kind, 0)
            if found == 0:
                found = kinds[kind] = next((out for base, out in lists
                                            if issubclass(kind, base)), None)
            if found is not None:
                found.append(obj)
        # a wrapper whose state is another optimizer's (DistributedOptimizer) counts once
        seen_states: set = set()
        self.optimizers = [o for o in self.optimizers if id(o.state) not in seen_states
                           and not seen_states.add(id(o.state))]
        self.data = [t._data for t in self.tensors]
        self.grads = [t._grad for t in self.tensors]
        self.owner: dict[int, Tensor] = {}  # id(array) -> a tensor holding it (bases first)
        for t in self.tensors:
            if t._view is None or id(t._data) not in self.owner:
                self.owner[id(t._data)] = t
        # id(grad tensor) -> the tensor it is the gradient of; id(grad's array) -> that tensor
        self.grad_of = {id(g): t for t, g in zip(self.tensors, self.grads) if g is not None}
        self.grad_owner = {id(g._data): t for t, g in zip(self.tensors, self.grads)
                           if g is not None}
        self.opt_state = [{pid: dict(st) for pid, st in dict.items(o.state)}
                          for o in self.optimizers]
        self.opt_entry: dict[int, tuple] = {}  # id(array) -> (optimizer, pid, key)
        for o, state in zip(self.optimizers, self.opt_state):
            for pid, st in state.items():
                for key, value in st.items():
                    if not isinstance(value, numbers.Number):
                        self.opt_entry.setdefault(id(value), (o, pid, key))
        self.groups = [[_hyper(g) for g in o.param_groups] for o in self.optimizers]
        self.unsupported = None  # why the recorded call cannot be replayed, if it cannot

    def writes(self, slot_of, name: str) -> tuple[list, list]:
        """(array writes, number increments) the call made: ``[(kind, ref, key, slot, meta)]``
        and ``[(optimizer ref, pid, key, delta)]``; CaptureError for what cannot be replayed."""
        from fastnn.capture.record import CaptureError

        out = []
        for t, data, grad in zip(self.tensors, self.data, self.grads):
            if t._data is not data:
                param = self.grad_of.get(id(t))
                if param is not None:  # a gradient accumulated into: p.grad's array
                    if param._grad is t:
                        out.append(("grad_data", weakref.ref(param), None,
                                    _slot(slot_of, t._data, name), None))
                else:
                    out.append(("data", weakref.ref(t), None, _slot(slot_of, t._data, name),
                                None))
            g = t._grad
            if g is not grad:
                if g is None:
                    out.append(("grad_none", weakref.ref(t), None, None, None))
                else:
                    shared = g._storage is not None and g._storage.copy_on_write
                    # meta[3]: the gradient was None before (eager makes a new one only then)
                    out.append(("grad_new", weakref.ref(t), None, _slot(slot_of, g._data, name),
                                (g._dtype, g._device, shared, grad is None)))
        steps = []
        for o, before, groups in zip(self.optimizers, self.opt_state, self.groups):
            ref = weakref.ref(o)
            for pid, st in dict.items(o.state):
                old = before.get(pid, {})
                for key, value in st.items():
                    was = old.get(key)
                    if isinstance(value, numbers.Number):
                        if value != was:
                            if not isinstance(was, numbers.Number):
                                was = 0
                            if not isinstance(value, numbers.Integral):
                                self.unsupported = (
                                    f"{type(o).__name__} keeps a number ({key!r}) that each "
                                    "step recomputes in Python; only counts are replayed")
                            steps.append((ref, pid, key, value - was))
                    elif value is not was:
                        out.append(("opt", ref, (pid, key), _slot(slot_of, value, name), None))
            if [_hyper(g) for g in o.param_groups] != groups:
                raise CaptureError(
                    f"fnn.compile: {name} changes a hyper-parameter of {type(o).__name__} "
                    "(a scheduler's step, or a param group edited): a recorded program "
                    "cannot replay that; call scheduler.step() outside the compiled function")
        return out, steps

    def location(self, array):
        """Where ``array`` lived before the call (the snapshot keeps those arrays alive, so
        their ids are theirs): ("grad", param ref), ("data", tensor ref), ("opt", ...)."""
        t = self.grad_owner.get(id(array))
        if t is not None:
            return ("grad", weakref.ref(t), None)
        t = self.owner.get(id(array))
        if t is not None:
            return ("data", weakref.ref(t), None)
        found = self.opt_entry.get(id(array))
        if found is not None:
            o, pid, key = found
            return ("opt", weakref.ref(o), (pid, key))
        return None

    def guard_of(self, o):
        """A check that optimizer ``o`` still has the options (all but lr) and the state
        entries per parameter it had before the call (a program depends on both)."""
        k = next(n for n, other in enumerate(self.optimizers) if other is o)
        # flat tuples (group, key, value, key, value, ...), each distinct set of state keys
        # once: the check lives as long as its program (a pair a tuple: ~56 bytes each)
        options = tuple((g,) + tuple(x for key, value in g.items()
                                     if key not in ("params", "lr")
                                     for x in (key, _copy(value)))
                        for g in o.param_groups)
        keysets: dict = {}
        entries = tuple((pid, keysets.setdefault(frozenset(st), frozenset(st)))
                        for pid, st in self.opt_state[k].items())
        # one group (the usual): its tuple alone, not a tuple of one (48 bytes)
        return OptimizerCheck(weakref.ref(o), entries,
                              options[0] if len(options) == 1 else options)

    def modules_of(self, tensors) -> list:
        """(module ref, training) for every module that holds one of ``tensors`` (ids), and
        every sub-module of it: a replay checks their training flags."""
        out = []
        seen = set()
        for m in self.modules:
            own = {id(p) for p in m._parameters.values() if p is not None}
            if own & tensors or any(id(b) in tensors for b in m._buffers.values()):
                for sub in m.modules():
                    if id(sub) not in seen:
                        seen.add(id(sub))
                        out.append((weakref.ref(sub), sub.training))
        return out


def _slot(slot_of, array, name):
    from fastnn.capture.record import CaptureError

    i = slot_of.get(id(array))
    if i is None:
        raise CaptureError(
            f"fnn.compile: {name} stores an array that no backend call of the step made "
            "(a tensor built before the call and assigned to a parameter, a buffer or a "
            "gradient?); a recorded program cannot replay that")
    return i


def _hyper(group: dict) -> tuple:
    """A param group's options other than its parameters, as a comparable tuple; the
    learning rate second (a replay reads it, so it is no part of the signature)."""
    rest = tuple((k, _frozen(v)) for k, v in group.items() if k not in ("params", "lr"))
    return ("lr", group["lr"], rest)


def _frozen(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


_NO_OPTIONS: dict = {}
"""An empty dict option (per-class learning rates, none) as recorded: one for all checks
(never written to), not a copy each (64 bytes for as long as a program lives)."""


def _copy(value):
    if isinstance(value, dict):
        return dict(value) if value else _NO_OPTIONS
    return value


def bump(t) -> None:
    """Stamp ``t``'s storage as written (the autograd engine's version check)."""
    if t._storage is not None:
        t._storage.version = engine.tick()


class OptimizerCheck:
    """``check()``: whether an optimizer is alive and still has the state entries and
    options it had when recorded (:meth:`Snapshot.guard_of`). An object of four fields,
    not a closure: a program keeps it for as long as it lives (~0.3 KB less, measured)."""

    __slots__ = ("ref", "entries", "options")

    def __init__(self, ref, entries: tuple, options: tuple):
        self.ref, self.entries, self.options = ref, entries, options

    def __call__(self) -> bool:
        opt = self.ref()
        if opt is None or len(opt.state) != len(self.entries):
            return False
        state = opt.state
        for pid, keys in self.entries:
            st = state.get(pid)
            if st is None or st.keys() != keys:
                return False
        options = self.options
        if options and type(options[0]) is dict:  # (one group: its tuple alone)
            options = (options,)
        for items in options:
            g = items[0]
            for n in range(1, len(items), 2):
                if g.get(items[n]) != items[n + 1]:
                    return False
        return True
