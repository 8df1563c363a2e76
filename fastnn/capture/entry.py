"""A recorded signature's entry: its program, how a replay fills its inputs and where it
writes its outputs, the checks that choose it, and the first replay's comparison.

:mod:`fastnn.capture.build` makes entries from recordings.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.capture.record import is_array
from fastnn.ops import rng_state
from fastnn.ops.tensor import Tensor


class Entry:
    """One signature's program and everything a replay reads, writes and checks."""

    # fixed attributes: an entry lives as long as its compiled function
    __slots__ = ("program", "eager", "checked", "getters", "writes", "steps", "draws",
                 "result", "args_now", "fast", "devices", "out_devices", "copied",
                 "inplace", "inplace_index", "dry_inputs")

    def __init__(self):
        self.program = None
        self.eager = None  # why this signature runs eagerly (None: it replays)
        self.checked = False
        self.getters: list = []  # one per program input: (leaves, draws) -> value
        self.writes: list = []  # (kind, ref, key, output index, meta)
        self.steps: list = []  # (optimizer ref, pid, key, delta): counts a replay adds
        self.draws: tuple = ()  # (method, args, kwargs): fastnn's generator, as recorded
        self.result = None  # the return value's template
        self.args_now = [None]  # the current call's arguments, for ArgRef
        self.fast = None  # replay(leaves) written out (fastnn.capture.replay), if built
        # for the first replay's check (build.py fills them; settle() drops them)
        self.devices = self.out_devices = self.copied = None
        self.inplace = self.inplace_index = self.dry_inputs = None

    @classmethod
    def eager_only(cls, key, why: str):
        entry = cls()
        entry.eager = why
        return entry

    def guards_hold(self) -> bool:
        fast = self.fast  # None only for an eager-only entry, which has no guards
        return fast is None or fast(None, False)

    def settle(self) -> None:
        """The first replay's check passed: from now on only the written-out replay runs
        (``fast``), so what the check and :meth:`replay`'s own loops read goes (a program
        lives as long as its function: what it keeps counts against the step's memory);
        the program's calls and descriptions are packed until read again (``program()``)."""
        if self.fast is None:
            return
        self.getters = self.writes = self.steps = None
        self.copied = self.devices = self.out_devices = None
        self.inplace = self.inplace_index = self.dry_inputs = None
        program = self.program
        if program.plan is not program:  # a fused form: packed apart
            program.plan.pack()
        program.pack()

    # ------------------------------------------------------------ replay
    def counts(self) -> list:
        return [ref().state[pid][key] for ref, pid, key, _ in self.steps]

    def set_counts(self, values) -> None:
        for (ref, pid, key, _), value in zip(self.steps, values):
            ref().state[pid][key] = value

    def replay(self, leaves, dry: bool = False):
        """Run the program on the current inputs; write its outputs where the eager step
        did (``dry``: on copies of the inputs, writing nothing: the first replay's check,
        the one replay not made by ``fast``, :class:`fastnn.capture.replay.Replay`)."""
        if not dry:
            return self.fast(leaves)
        self.args_now[0] = leaves
        for ref, pid, key, delta in self.steps:
            ref().state[pid][key] += delta
        rng = rng_state.host_rng()
        draws = [getattr(rng, m)(*a, **k) for m, a, k in self.draws]
        env = [get(leaves, draws) for get in self.getters]
        env = [_copy(v, dev) if own else v
               for v, dev, own in zip(env, self.devices, self.copied)]
        self.dry_inputs = env
        return self.program.runner()(list(env))

    def compare(self, outs, result):
        """None when the eager run (just done) left what the dry replay gave, else what
        differs."""
        for kind, ref, key, k, _meta in self.writes:
            owner = ref()
            if kind == "grad_none":
                if owner._grad is not None:
                    return "a gradient (the replay leaves it None)"
                continue
            if kind == "data":
                now, what = owner._data, f"a tensor of shape {owner.shape}"
            elif kind in ("grad_new", "grad_data"):
                if owner._grad is None:
                    return f"the gradient of a tensor of shape {owner.shape}"
                now, what = owner._grad._data, f"the gradient of shape {owner.shape}"
            else:
                now, what = owner.state[key[0]][key[1]], f"optimizer state {key[1]!r}"
            if not _same(now, outs[k], self.out_devices[k]):
                return what
        dry, self.dry_inputs = self.dry_inputs_of(), None  # the copies go once compared
        for (slot_get, dev), copied in zip(self.inplace, dry):
            if not _same(slot_get(), copied, dev):
                return "a tensor written in place"
        replayed = _rebuild(self.result, outs)
        return _compare_result(result, replayed)

    def dry_inputs_of(self) -> list:
        return [self.dry_inputs[n] for n in self.inplace_index]


def _same(a, b, dev) -> bool:
    ops = dev.ops
    x, y = np.asarray(ops.to_numpy(a)), np.asarray(ops.to_numpy(b))
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(
        x, y, equal_nan=dtypes.floating_kind(x.dtype))


def _compare_result(eager, replayed):
    if isinstance(eager, Tensor):
        if not isinstance(replayed, Tensor) or not _same(eager._data, replayed._data,
                                                         eager._device):
            return "the returned tensor"
        return None
    if isinstance(eager, (tuple, list)):
        for a, b in zip(eager, replayed):
            found = _compare_result(a, b)
            if found:
                return found
        return None
    if isinstance(eager, dict):
        for k in eager:
            found = _compare_result(eager[k], replayed[k])
            if found:
                return found
        return None
    return None if eager == replayed or eager is replayed else "the returned value"


def _copy(value, dev):
    if dev is None or not is_array(value):
        return value
    host = np.array(dev.ops.to_numpy(value), copy=True)
    return dev.ops.from_numpy(host, dev.index)


def _rebuild(template, outs):
    kind = type(template)
    if kind is OutTensor:
        return Tensor._make(outs[template.k], template.dtype, template.device)
    if kind is tuple or kind is list:
        return kind(_rebuild(v, outs) for v in template)
    if kind is dict:
        return {k: _rebuild(v, outs) for k, v in template.items()}
    return template


class ArgRef:
    """Stands where a weak reference to a tensor would, for a tensor that is an argument of
    the step: ``ref()`` is the argument at that position in the current call."""

    __slots__ = ("holder", "n")

    def __init__(self, holder, n):
        self.holder, self.n = holder, n

    def __call__(self):
        return self.holder[0][self.n]


class OutTensor:
    """A tensor in a result's template: output ``k`` of the program, its dtype and device."""

    __slots__ = ("k", "dtype", "device")

    def __init__(self, k, dtype, device):
        self.k, self.dtype, self.device = k, dtype, device
