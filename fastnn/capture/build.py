"""From a recording to a replayable entry: inputs bound, scalars made inputs, guards noted.

Each external slot of the recording is bound to what held its array before the call: an
argument of the step (by position), a parameter or any other live tensor, a gradient,
an optimizer's state entry, or else it stays a constant. The optimizer hooks' learning
rates, weight decays and step counts become inputs read at each replay (a schedule's lr,
Adam's bias corrections are never baked in), and so do the seeds drawn from fastnn's
generator (dropout): a replay draws them as the eager step would.
"""

from __future__ import annotations

import numbers
import weakref

import numpy as np

from fastnn.api import fusion
from fastnn.api.device import Device
from fastnn.api.program import (
    Layouts,
    Program,
    Seq,
    Slot,
    contiguous_strides,
    eliminate_dead,
    slots_in,
)
from fastnn.capture.entry import ArgRef, Entry, OutTensor
from fastnn.capture.record import CaptureError, is_array
from fastnn.capture.replay import replay_of
from fastnn.ops.tensor import Tensor

# ---------------------------------------------------------------- building

_NO_SLOTS = frozenset()
"""The set of no slots, made once (CPython makes each empty frozenset anew: 216 bytes a
program would keep)."""


def build(name, recorder, snapshot, leaves, draws, result) -> Entry:
    """The entry for one recording (see the module); an eager-only entry where the
    recording cannot be replayed faithfully."""
    entry = Entry()
    values, calls = recorder.values, recorder.calls
    by_arg = {}
    for n, leaf in enumerate(leaves):
        by_arg.setdefault(id(leaf._data if isinstance(leaf, Tensor) else leaf), n)
    # where the step writes into (or reads the gradient of) an argument, a replay does
    # that to the argument of its own call
    entry.args_now[0] = leaves
    arg_refs = {id(leaf): ArgRef(entry.args_now, n) for n, leaf in enumerate(leaves)
                if isinstance(leaf, Tensor)}
    writes, entry.steps = snapshot.writes(recorder.slot_of, name)
    if snapshot.unsupported is not None:
        return Entry.eager_only(None, snapshot.unsupported)
    writes = [(kind, arg_refs.get(id(ref()), ref), key, slot, meta)
              for kind, ref, key, slot, meta in writes]
    binds: dict[int, tuple] = {}  # slot -> how a replay fills it
    for i in recorder.external:
        n = by_arg.get(id(values[i]))
        binds[i] = ("arg", n) if n is not None else snapshot.location(values[i])
        b = binds[i]
        if b is not None and b[0] in ("data", "grad") and id(b[1]()) in arg_refs:
            binds[i] = (b[0], arg_refs[id(b[1]())], b[2])
    for n, leaf in enumerate(leaves):
        if isinstance(leaf, np.ndarray) and n not in [b[1] for b in binds.values()
                                                     if b and b[0] == "arg"]:
            raise CaptureError(
                f"fnn.compile: argument {n} of {name} is a NumPy array whose values reach "
                "the step through a conversion the recording cannot follow; pass a fastnn "
                "tensor (fnn.tensor(array)) instead")
    scalars = _bind_optimizer_scalars(calls, binds, values, snapshot, recorder)
    entry.draws, draw_binds = _bind_draws(name, calls, draws, recorder)
    binds.update(scalars)
    binds.update(draw_binds)
    # the result: tensors become outputs, anything else is returned as it was
    outputs: list[int] = [w[3] for w in writes if w[3] is not None]
    entry.result = _result_template(result, recorder, outputs, binds, snapshot, by_arg)
    if grad_needed(result) and not any(w[0].startswith("grad") for w in writes):
        return Entry.eager_only(None, "its result carries autograd history for a backward "
                                "outside the compiled function; compile the whole step")
    entry.writes = [(kind, ref, key, outputs.index(s) if s is not None else None, meta)
                    for kind, ref, key, s, meta in writes]
    kept = eliminate_dead(calls, set(outputs))
    used = set(outputs)
    for call in kept:
        used.update(slots_in(call.args))
        used.update(slots_in(call.kwargs))
    inputs = [i for i in binds if i in used]
    device_of = _devices_of(kept)
    # the program's slots only (not those of the calls eliminated), each distinct
    # description and layout held once: what the program keeps for as long as it lives
    arrays = sorted(i for i in used.union(*(slots_in(c.out) for c in kept))
                    if is_array(values[i]))
    shared: dict = {}
    describe = {i: _describe(values[i], shared) for i in arrays}
    entry.program = Program(name, kept, inputs, outputs, describe)
    other, unknown = {}, []
    for i in arrays:
        strides = _strides(values[i])
        if strides is None:
            unknown.append(i)
        elif strides != contiguous_strides(describe[i]):
            other[i] = shared.setdefault(strides, strides)
    entry.program.layouts = Layouts(describe, other,
                                    frozenset(unknown) if unknown else _NO_SLOTS)
    del shared
    entry.program.aliases = _aliases(kept, values)
    entry.program.planner = fusion.planned
    entry.devices = [device_of.get(i) for i in inputs]
    entry.out_devices = [device_of.get(i) for i in outputs]
    entry.getters = [_getter(binds[i], values[i]) for i in inputs]
    # a dry replay copies what a call may write into (not the constants: host arrays)
    entry.copied = [binds[i] is not None and binds[i][0] in ("arg", "data", "grad", "opt")
                    for i in inputs]
    # inputs the program may write into (in place): compared by the first replay's check,
    # unless the step stores a new array there (compared as an output)
    stored = {("grad" if kind.startswith("grad") else kind, id(ref()), key)
              for kind, ref, key, _, _ in writes}
    entry.inplace, entry.inplace_index = [], []
    for n, i in enumerate(inputs):
        b = binds[i]
        if b is not None and b[0] in ("data", "grad", "opt") and entry.devices[n] is not None \
                and (b[0], id(b[1]()), b[2]) not in stored:
            entry.inplace.append((_location_reader(b), entry.devices[n]))
            entry.inplace_index.append(n)
    # the guards and the replay: one object (``fast(None, False)`` checks)
    guards = _guards(binds, inputs, values, writes, snapshot)
    entry.fast = replay_of(entry, binds, inputs, values, leaves, guards)
    entry.args_now[0] = None  # the recording's arguments are not kept alive
    return entry


def grad_needed(result) -> bool:
    if isinstance(result, Tensor):
        return result._node is not None
    if isinstance(result, (tuple, list)):
        return any(grad_needed(r) for r in result)
    if isinstance(result, dict):
        return any(grad_needed(r) for r in result.values())
    return False


def _result_template(result, recorder, outputs, binds, snapshot, by_arg):
    if isinstance(result, Tensor):
        i = recorder.slot_of.get(id(result._data))
        if i is None:  # a tensor the step did not touch (returned as it was)
            i = recorder.slot(result._data).i
            n = by_arg.get(id(result._data))
            binds[i] = ("arg", n) if n is not None else snapshot.location(result._data)
        outputs.append(i)
        return OutTensor(len(outputs) - 1, result._dtype, result._device)
    if isinstance(result, (tuple, list)):
        return type(result)(_result_template(r, recorder, outputs, binds, snapshot, by_arg)
                            for r in result)
    if isinstance(result, dict):
        return {k: _result_template(v, recorder, outputs, binds, snapshot, by_arg)
                for k, v in result.items()}
    return result


def _bind_optimizer_scalars(calls, binds, values, snapshot, recorder) -> dict:
    """The learning rates, weight decays and step count of each optimizer hook call, made
    program inputs read from the optimizer at each replay."""
    found = {}
    params_of = {}
    for o in snapshot.optimizers:
        for gi, group in enumerate(o.param_groups):
            for p in group["params"]:
                params_of[id(p)] = (o, gi)
    for call in calls:
        if not call.name.endswith("_step") or not call.args or type(call.args[0]) is not Seq:
            continue
        ps = []
        for item in call.args[0].items:
            b = binds.get(item.i) if type(item) is Slot else None
            ps.append(b[1]() if b and b[0] == "data" else None)
        if not ps or any(p is None or id(p) not in params_of for p in ps):
            continue
        o, gi = params_of[id(ps[0])]
        lrs, decays = o.lrs_and_decays(o.param_groups[gi], ps)
        st = o.state.get(id(ps[0]), {})
        oref, prefs = weakref.ref(o), tuple(weakref.ref(p) for p in ps)
        wanted = [("lrs", lrs), ("decays", decays)]
        for n, arg in enumerate(call.args):
            if type(arg) in (list, tuple) and wanted and list(arg) == list(wanted[0][1]):
                kind = wanted.pop(0)[0]
            elif type(arg) is int and st.get("step") == arg and "step" in st:
                kind = "step"
            else:
                continue
            i = recorder._new(arg)
            found[i] = ("scalar", kind, oref, gi, prefs)
            call.args[n] = Slot(i)
    return found


def _bind_draws(name, calls, draws, recorder):
    """fastnn's generator's draws, replayed in order; an integer drawn (a seed) and used as
    a hook's argument becomes an input."""
    seeds = {}
    for n, (_, _, _, result) in enumerate(draws):
        if isinstance(result, (numbers.Integral, np.integer)):
            seeds.setdefault(int(result), n)
    binds, used = {}, set()
    for call in calls:
        for n, arg in enumerate(call.args):
            if type(arg) is int and arg in seeds:
                i = recorder._new(arg)
                binds[i] = ("draw", seeds[arg])
                used.add(seeds[arg])
                call.args[n] = Slot(i)
    for n, (method, _, _, result) in enumerate(draws):
        if n not in used and not isinstance(result, (numbers.Number, np.generic)):
            raise CaptureError(
                f"fnn.compile: {name} draws host random numbers ({method}, e.g. fnn.randn) "
                "that become data: a replay cannot follow them; draw on the device "
                "(fnn.rand, dropout) or pass the samples as an argument")
    return tuple((m, a, k) for m, a, k, _ in draws), binds  # (none: the empty tuple)


def _getter(bind, value):
    if bind is None:
        return lambda leaves, draws: value
    kind = bind[0]
    if kind == "arg":
        n = bind[1]
        return lambda leaves, draws: _data(leaves[n])
    if kind == "draw":
        n = bind[1]
        return lambda leaves, draws: int(draws[n])
    if kind == "scalar":
        _, what, oref, gi, prefs = bind
        if what == "step":
            pid = id(prefs[0]())
            return lambda leaves, draws: oref().state[pid]["step"]
        pick = 0 if what == "lrs" else 1

        def rates(leaves, draws):
            o = oref()
            return o.lrs_and_decays(o.param_groups[gi], [r() for r in prefs])[pick]
        return rates
    read = _location_reader(bind)
    return lambda leaves, draws: read()


def _data(leaf):
    return leaf._data if isinstance(leaf, Tensor) else leaf


def _location_reader(bind):
    kind, ref, key = bind[0], bind[1], bind[2]
    if kind == "data":
        return lambda: ref()._data
    if kind == "grad":
        return lambda: ref()._grad._data
    return lambda: ref().state[key[0]][key[1]]


def _guards(binds, inputs, values, writes, snapshot) -> tuple:
    """The checks that choose this entry: the arguments of
    :func:`fastnn.capture.replay.guards_hold`, tuples of what to check (a program lives
    as long as its function: shared code and its data keep less than code of its own;
    measured ~0.4 KB for the MLP step, the same time a call): each tensor read or written
    is alive (with the shape of its array or gradient), each optimizer has its options
    and state entries, each module its training flag."""
    tensors, optimizers = set(), {}
    data, grads, fresh, alive = [], [], [], []
    for i in inputs:
        b = binds[i]
        if b is None or b[0] not in ("data", "grad", "opt") or type(b[1]) is ArgRef:
            continue
        shape, ref = tuple(values[i].shape), b[1]
        if b[0] == "data":
            tensors.add(id(ref()))
            data.append((ref, shape))
        elif b[0] == "grad":
            tensors.add(id(ref()))
            grads.append((ref, shape))
        else:
            optimizers[id(ref())] = ref
    for kind, ref, _key, _, meta in writes:
        if type(ref) is ArgRef:  # the signature says whether an argument has a gradient
            continue
        if kind == "grad_new" and meta[3]:  # the step starts from no gradient
            fresh.append(ref)
        if kind == "opt":
            optimizers[id(ref())] = ref
        elif id(ref()) not in tensors:  # (else: checked alive above already)
            tensors.add(id(ref()))
            alive.append(ref)
    for b in binds.values():
        if b is not None and b[0] == "scalar":
            optimizers[id(b[2]())] = b[2]
    modules = snapshot.modules_of(tensors)
    dims: dict = {}  # equal sizes: one int (those above 256 are an object each)
    parts = [tuple(r for r, _ in data), _flat([s for _, s in data], dims),
             tuple(r for r, _ in grads), _flat([s for _, s in grads], dims),
             tuple(fresh), tuple(alive),
             tuple(snapshot.guard_of(ref()) for ref in optimizers.values()),
             tuple(r for r, flag in modules if flag is True),
             tuple(r for r, flag in modules if flag is False),
             tuple((r, flag) for r, flag in modules if flag is not True and flag is not False)]
    return tuple(part if part else () for part in parts)


def _flat(shapes, dims: dict) -> tuple:
    """``shapes`` as one tuple, each its rank then its sizes (a tuple of shapes kept ~2x
    more: measured ~0.3 KB of the MLP step's guards)."""
    out: list = []
    for shape in shapes:
        out.append(len(shape))
        out.extend(dims.setdefault(d, d) for d in shape)
    return tuple(out)


def _aliases(calls, values) -> dict:
    """slot -> the argument slots of its call whose memory it shared when recorded (a
    view); a backend's array that is not NumPy's counts as sharing (unknown)."""
    found = {}
    for call in calls:
        args = [i for i in slots_in(call.args) + slots_in(call.kwargs) if is_array(values[i])]
        for j in slots_in(call.out):
            out = values[j]
            if not is_array(out):
                continue
            shared = [i for i in args if _shares(out, values[i])]
            if shared:
                found[j] = tuple(shared)
    return found


def _shares(a, b) -> bool:
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        return False  # a NumPy scalar owns its value
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return bool(np.may_share_memory(a, b))
    return True


def _devices_of(calls) -> dict:
    found: dict[int, Device] = {}
    for call in calls:
        for i in slots_in(call.args) + slots_in(call.kwargs) + slots_in(call.out):
            found.setdefault(i, call.device)
    return found


def _strides(value):
    strides = getattr(value, "strides", None)
    return None if strides is None else tuple(strides)


_DTYPE_NAMES: dict = {}  # dtype -> its name, formatted once per process


def _describe(value, shared: dict) -> str:
    """``float32[64, 10]``: one string per distinct dtype and shape in ``shared``. The
    dtype's name is formatted once per process: NumPy keeps memory behind each
    formatting (measured with tracemalloc, ~100 bytes a call), which a program would
    carry for as long as it lives."""
    dtype = value.dtype
    key = (dtype, value.shape)
    text = shared.get(key)
    if text is None:
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = _DTYPE_NAMES[dtype] = str(dtype)
        text = shared[key] = name + str(list(value.shape))
    return text
