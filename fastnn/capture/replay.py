"""A recorded signature's replay as data: what to read, run and write, run by one shared
function.

What :meth:`fastnn.capture.entry.Entry.replay` does with closures (a getter per input)
and loops over kinds, a :class:`Replay` does from a few tuples: each input a kind (one
byte) and its operands (a reference, an argument's position, a key), the outputs' writes
grouped (a run of new gradients one write), the guards the arguments of
:func:`guards_hold`. A compiled step keeps it for as long as it lives: generated Python
kept ~1.9 KB for the MLP step (code, names, line table, the function), this ~0.9 KB
(measured), for 1-6 us more a replay. One ``lrs_and_decays`` per optimizer group, as
before (an input order that went back to a group would ask again). ``replay(None,
False)`` checks the guards; the first replay's check (``dry``) still runs
:meth:`Entry.replay` itself.
"""

from __future__ import annotations

import weakref
from array import array

from fastnn.api.program_vm import Interpreted
from fastnn.autograd import engine
from fastnn.capture.entry import ArgRef, OutTensor, _rebuild
from fastnn.capture.state import bump
from fastnn.ops import rng_state
from fastnn.ops.tensor import Tensor

# an input's kind; its operands follow in Replay.operands (TDATA, TGRAD: a parameter by
# its place in the optimizer's, see Replay.table)
DATA, ARG, GRAD, CONST, RATE, RAW, DRAW, STEP, OPT, TDATA, TGRAD = range(11)


class Replay:
    """``self(leaves)``: one replay of an entry (see the module); ``self(None, False)``:
    whether its guards hold."""

    __slots__ = ("guards", "args_now", "steps", "draws", "kinds", "operands", "rates",
                 "dropped", "program", "writes", "result", "table", "table_ids")
    # once its first replay was checked, a replay stands for its entry in the cache
    # (fastnn.capture.compiled): an entry's fields the cache reads, for ~0.2 KB less kept
    eager = None
    checked = True

    def guards_hold(self) -> bool:
        return self(None, False)

    def __call__(self, leaves, run=True):
        spec = self.table
        if not run:
            if spec is None:
                return guards_hold(None, self.guards)
            table = _resolve(spec, self.table_ids)
            return table is not None and guards_hold(table, self.guards)
        table = None if spec is None else _resolve(spec)  # (the guards just held)
        args_now = self.args_now
        if args_now is not None:
            args_now[0] = leaves
        for ref, pid, key, delta in self.steps:
            ref().state[pid][key] += delta
        draws = _draw(rng_state.host_rng(), self.draws) if self.draws else None
        group = rates = None  # the latest optimizer group's (lrs, decays): inputs of one
        env = []  # group are adjacent (no dict: CPython keeps a freed one, counted)
        add = env.append
        nx = iter(self.operands).__next__
        for kind in self.kinds:
            if kind == TDATA:
                add(table[nx()]._data)
            elif kind == DATA:
                add(nx()()._data)
            elif kind == ARG:
                add(leaves[nx()]._data)
            elif kind == GRAD:
                add(nx()()._grad._data)
            elif kind == TGRAD:
                add(table[nx()]._grad._data)
            elif kind == CONST:
                add(nx())
            elif kind == RATE:  # (group, 0 for the learning rates or 1 for the decays)
                g = nx()
                if g != group:
                    oref, gi, prefs = self.rates[g]
                    o = oref()
                    group, rates = g, o.lrs_and_decays(o.param_groups[gi], [
                        table[r] if type(r) is int else r() for r in prefs])
                add(rates[nx()])
            elif kind == RAW:
                add(leaves[nx()])
            elif kind == DRAW:
                add(int(draws[nx()]))
            elif kind == STEP:
                o = nx()()
                add(o.state[nx()]["step"])
            else:  # OPT
                o = nx()()
                add(o.state[nx()][nx()])
        del rates, add, nx  # (not held while the program runs)
        if args_now is None:  # (nor the arguments' list: read, and only this reads it)
            leaves.clear()
        # a gradient the step replaces without reading it (zero_grad inside the step)
        # goes before the program runs, as eager's zero_grad drops it
        for r in self.dropped:
            (table[r] if type(r) is int else r())._grad = None
        run = self.program.runner()
        del table  # (not held while the program runs: found again after)
        # a program as data empties env once read (no room held while it runs)
        outs = run.take(env) if type(run) is Interpreted else run(env)
        del env, run
        table = None if spec is None else _resolve(spec)
        for kind, ref, key, k, meta in self.writes:
            if kind == "grads":  # new gradients of one dtype and device
                dtype, device, shared = meta[0], meta[1], meta[2]
                if type(k) is int:  # (consecutive outputs: the first)
                    k = range(k, k + len(ref))
                for r, n in zip(ref, k):
                    g = (table[r] if type(r) is int else r())._grad = Tensor._make(
                        outs[n], dtype, device)
                    if shared:
                        g._storage = engine._SHARED
            elif kind == "data":
                o = table[ref] if type(ref) is int else ref()
                o._data = outs[k]
                bump(o)
            elif kind == "grad_new":
                g = (table[ref] if type(ref) is int else ref())._grad = Tensor._make(
                    outs[k], meta[0], meta[1])
                if meta[2]:
                    g._storage = engine._SHARED
            elif kind == "grad_data":
                (table[ref] if type(ref) is int else ref())._grad._data = outs[k]
            elif kind == "grad_none":
                (table[ref] if type(ref) is int else ref())._grad = None
            else:
                ref().state[key[0]][key[1]] = outs[k]
        if args_now is not None:
            args_now[0] = None
        result = self.result
        if type(result) is OutTensor:
            return Tensor._make(outs[result.k], result.dtype, result.device)
        return _rebuild(result, outs)

    replay = __call__  # (as an entry's: no frame of its own around the replay)


def replay_of(entry, binds, inputs, values, leaves, guards: tuple) -> Replay:
    """The :class:`Replay` of ``entry`` (``values``: the recording's value of each slot,
    for the constants; ``guards``: :func:`guards_hold`'s arguments)."""
    replay = Replay()
    pool: dict = {}  # equal tuples of the same references: one tuple kept
    replay.table, replay.table_ids, at = _table_of(binds)
    guards = tuple(tuple(map(at, part)) if n in (0, 2, 4, 5) else part
                   for n, part in enumerate(guards))  # (the tensors' references)
    replay.guards = tuple(_one(part, pool, n in (0, 2, 4, 5)) for n, part in enumerate(guards))
    uses_args = any(type(w[1]) is ArgRef for w in entry.writes) or any(
        binds[i] is not None and len(binds[i]) > 1 and type(binds[i][1]) is ArgRef
        for i in inputs)
    replay.args_now = entry.args_now if uses_args else None
    replay.steps = tuple(entry.steps)
    replay.draws = entry.draws
    kinds, operands, rates = bytearray(), [], {}
    for i in inputs:
        kind, more = _input(binds[i], values[i], leaves, rates)
        if kind in (DATA, GRAD) and type(at(more[0])) is int:
            kind, more = (TDATA if kind == DATA else TGRAD), (at(more[0]),)
        kinds.append(kind)
        operands.extend(more)
    replay.kinds, replay.operands = bytes(kinds), tuple(operands)
    replay.rates = tuple((oref, gi, _one(tuple(map(at, prefs)), pool, True))
                         for oref, gi, prefs in rates.values())
    read = {id(binds[i][1]) for i in inputs if binds[i] is not None and binds[i][0] == "grad"}
    read |= {id(binds[i][1]()) for i in inputs if binds[i] is not None and
             binds[i][0] == "grad" and type(binds[i][1]) is not ArgRef}
    dropped = tuple(ref for kind, ref, _key, _k, meta in entry.writes
                    if kind == "grad_new" and not meta[3] and type(ref) is not ArgRef and
                    id(ref) not in read and id(ref()) not in read)
    writes = tuple((kind, _one(tuple(map(at, ref)), pool, True), key, k, meta)
                   if kind == "grads"
                   else (kind, at(ref) if kind != "opt" else ref, key, k, meta)
                   for kind, ref, key, k, meta in _grouped(entry.writes))
    replay.dropped, replay.writes = _one(tuple(map(at, dropped)), pool, True), writes
    replay.program, replay.result = entry.program, entry.result
    return replay


def _table_of(binds) -> tuple:
    """(``Replay.table``, ``Replay.table_ids``, reference -> its place there, or the
    reference itself): the parameters of the optimizer whose hooks the step calls,
    found at each replay through one weak reference to it, and the ids they had (a
    weak reference to each kept 80 bytes; measured 0.3 KB less for the MLP step, one
    bytes object of ids). The guards check the ids:
    a parameter replaced there (or freed: it would have left the list first) fails
    them, as its weak reference would have died; an id is only reused by another
    tensor after the one recorded was freed, and then it is that tensor the optimizer
    and the replay both update."""
    oref = next((b[2] for b in binds.values() if b is not None and b[0] == "scalar"), None)
    if oref is None:
        return None, None, lambda ref: ref
    members = [p for g in oref().param_groups for p in g["params"]]
    place: dict = {}
    for k, p in enumerate(members):
        place.setdefault(id(p), k)

    def at(ref):
        if type(ref) is not weakref.ReferenceType:
            return ref
        return place.get(id(ref()), ref)
    return oref, array("Q", map(id, members)).tobytes(), at


def _resolve(oref, ids: bytes | None = None):
    """The parameters of ``Replay.table``'s optimizer in order (``ids``: None where the
    optimizer is gone or they are other tensors than those of these ids)."""
    o = oref()
    if o is None:
        return None
    found = [p for g in o.param_groups for p in g["params"]]
    if ids is not None and array("Q", map(id, found)).tobytes() != ids:
        return None
    return found


def _one(items: tuple, pool: dict, refs: bool = False):
    """``items``, or the tuple of the same objects met before (the guards', the writes'
    and the optimizer's tuples of a step's parameters are often one); ``refs``: tensor
    references, which are places in ``Replay.table`` where they are ints: consecutive
    places a range (48 bytes, a tuple 40 and 8 a place)."""
    if not items:
        return ()
    key = tuple(map(id, items))
    found = pool.get(key)
    if found is None:
        found = pool[key] = items
        first = items[0]
        if refs and len(items) > 1 and type(first) is int and \
                items == tuple(range(first, first + len(items))):
            found = pool[key] = range(first, first + len(items))
    return found


def _input(bind, value, leaves, rates) -> tuple:
    """(kind, operands) of one program input."""
    if bind is None:  # a constant of the recording
        return CONST, (value,)
    kind = bind[0]
    if kind == "arg":
        n = bind[1]
        return (ARG if isinstance(leaves[n], Tensor) else RAW), (n,)
    if kind == "draw":
        return DRAW, (bind[1],)
    if kind == "scalar":
        _, what, oref, gi, prefs = bind
        if what == "step":
            return STEP, (oref, id(prefs[0]()))
        key = (id(oref), gi)
        if key not in rates:
            rates[key] = (oref, gi, prefs)
        return RATE, (list(rates).index(key), 0 if what == "lrs" else 1)
    if kind == "data":
        return DATA, (bind[1],)
    if kind == "grad":
        return GRAD, (bind[1],)
    return OPT, (bind[1], bind[2][0], bind[2][1])


def guards_hold(table, guards: tuple) -> bool:
    """Whether the tensors a replay reads are alive with the shapes recorded (``data``
    with ``data_shapes``; ``grads``: their gradients, with ``grad_shapes``; the shapes
    one flat tuple, each a rank and its sizes), those
    whose gradient the step makes anew have none (``fresh``), those it writes are alive
    (``alive``), each of ``checks`` (optimizers) holds, and each module has its training
    flag (``training``, ``not_training``: references; ``modules``: (reference, flag))
    (:func:`fastnn.capture.build._guards`); a reference an int is a place in ``table``
    (:func:`_table_of`). ``guards`` is one tuple of them, unpacked here: a tuple of
    arguments made at each call would stay on CPython's free list (counted)."""
    data, data_shapes, grads, grad_shapes, fresh, alive, checks, training, not_training, \
        modules = guards
    k = 0
    for r in data:
        t = table[r] if type(r) is int else r()
        n = data_shapes[k]
        if t is None or tuple(t._data.shape) != data_shapes[k + 1:k + 1 + n]:
            return False
        k += n + 1
    k = 0
    for r in grads:
        t = table[r] if type(r) is int else r()
        n = grad_shapes[k]
        if t is None or t._grad is None or \
                tuple(t._grad._data.shape) != grad_shapes[k + 1:k + 1 + n]:
            return False
        k += n + 1
    for r in fresh:
        t = table[r] if type(r) is int else r()
        if t is None or t._grad is not None:
            return False
    for r in alive:
        if type(r) is not int and r() is None:
            return False
    for check in checks:
        if not check():
            return False
    for r in training:
        m = r()
        if m is None or m.training != True:  # noqa: E712 (a flag that is not a bool fails)
            return False
    for r in not_training:
        m = r()
        if m is None or m.training != False:  # noqa: E712
            return False
    for r, flag in modules:
        m = r()
        if m is None or m.training != flag:
            return False
    return True


def _draw(rng, draws) -> list:
    """fastnn's generator's draws, as recorded (one function for every replay: a
    comprehension in the generated code would be a code object of each program's own)."""
    return [getattr(rng, m)(*a, **k) for m, a, k in draws]


def _grouped(writes) -> list:
    """``writes`` with each run of three or more new gradients of one dtype, device and
    sharing as one write ``("grads", (ref, ...), None, (output index, ...), meta)``: two
    tuples, not a pair each (~56 bytes a gradient for as long as the program lives); the
    output indices the first alone where they are consecutive."""
    out: list = []
    run: list = []

    def flush():
        if len(run) >= 3:
            ks = tuple(w[3] for w in run)
            if ks == tuple(range(ks[0], ks[0] + len(ks))):
                ks = ks[0]  # consecutive outputs (the usual): the first
            out.append(("grads", tuple(w[1] for w in run), None, ks, run[0][4]))
        else:
            out.extend(run)
        run.clear()

    for w in writes:
        if w[0] == "grad_new" and run and w[4][:3] == run[0][4][:3] or \
                w[0] == "grad_new" and not run:
            run.append(w)
            continue
        flush()
        if w[0] == "grad_new":
            run.append(w)
        else:
            out.append(w)
    flush()
    return out
