"""A recorded signature's replay and guards as straight-line Python, generated once.

:meth:`fastnn.capture.entry.Entry.replay` reads each input through a closure, writes each
output through a loop over kinds, and asks the optimizer for its learning rates once per
input that holds them; the guards are a list of closures. Here the same work is written
out once per entry (``s3 = r3()._data``, ``o = w0(); o._data = outs[0]``), so a replay
pays for what it must read and write and for nothing else: at most one
``lrs_and_decays`` per optimizer group and no per-input call or kind test.
The first replay's check (``dry``) still runs :meth:`Entry.replay` itself. The guards
that choose the entry are the first lines of the same function (``replay(None, False)``
runs only them): one function a program keeps, not two.
"""

from __future__ import annotations

import sys

from fastnn.api.program_names import Fresh, make_function
from fastnn.autograd import engine
from fastnn.capture.entry import ArgRef, OutTensor, _rebuild
from fastnn.ops import rng_state
from fastnn.ops.tensor import Tensor


class Source:
    """Lines of a generated function and the objects its names stand for."""

    def __init__(self):
        self.lines: list[str] = []
        self.scope: dict = {}
        self._named: dict = {}  # id(value) -> its name: one global per object
        self._fresh = Fresh()

    def name(self, value, prefix: str) -> str:
        """The name of ``value`` in the function: one per object, and one per tuple of
        the same objects (the guards', the writes' and the optimizer's tuples of a
        step's parameters are one tuple kept, not three)."""
        ident = ("tuple",) + tuple(map(id, value)) if type(value) is tuple else id(value)
        key = self._named.get(ident)
        if key is None:
            key = self._named[ident] = self._fresh(prefix)  # (one letter: no string)
            self.scope[key] = value
        return key

    def add(self, line: str) -> None:
        self.lines.append("    " + line)

    def function(self, head: str, defaults: tuple = ()):
        """The function ``head`` (``def name(params):``, ``defaults`` those of its last
        params) with these lines; the objects named are its defaults too (read as fast
        locals; it has no globals of its own, and no name or file name of its own: a
        program keeps no string for them)."""
        name, _, params = head[len("def "):].rstrip(":").rstrip(")").partition("(")
        name = sys.intern(name)  # (the code's own name: no string of its own)
        bound = "".join(f"{key}=None, " for key in self.scope)
        head = f"def {name}({params}{', ' if params and bound else ''}{bound}):"
        source = "\n".join([head] + (self.lines or ["    pass"]))
        return make_function(source, name, defaults + tuple(self.scope.values()))


def fast_replay(entry, binds, inputs, values, leaves, src=None):
    """``replay(leaves, run=True)`` for ``entry``: what ``Entry.replay(leaves)`` does,
    written out (``values``: the recording's value of each slot, for the constants) after
    the lines already in ``src`` (the guards, which ``run=False`` runs)."""
    src = src if src is not None else Source()
    uses_args = any(type(w[1]) is ArgRef for w in entry.writes) or any(
        binds[i] is not None and len(binds[i]) > 1 and type(binds[i][1]) is ArgRef
        for i in inputs)
    args_now = src.name(entry.args_now, "args_now")
    if uses_args:
        src.add(f"{args_now}[0] = leaves")
    for ref, pid, key, delta in entry.steps:
        src.add(f"{src.name(ref, 'o')}().state[{pid!r}][{key!r}] += {delta!r}")
    if entry.draws:
        src.add(f"rng = {src.name(rng_state.host_rng, 'host_rng')}()")
        src.add(f"draws = {src.name(_draw, 'draw')}(rng, {src.name(entry.draws, 'd')})")
    rates: dict = {}  # (optimizer ref, group) -> the local holding (lrs, decays)
    env = []
    for i in inputs:
        env.append(_input_code(src, binds[i], values[i], leaves, rates))
    src.add("env = [" + "".join(f"{e}, " for e in env) + "]")
    # a gradient the step replaces without reading it (zero_grad inside the step) goes
    # before the program runs, as eager's zero_grad drops it: not held beside the new one
    read = {id(binds[i][1]) for i in inputs if binds[i] is not None and binds[i][0] == "grad"}
    read |= {id(binds[i][1]()) for i in inputs if binds[i] is not None and
             binds[i][0] == "grad" and type(binds[i][1]) is not ArgRef}
    dropped = [ref for kind, ref, _key, _k, meta in entry.writes
               if kind == "grad_new" and not meta[3] and type(ref) is not ArgRef and
               id(ref) not in read and id(ref()) not in read]
    writes = _grouped(entry.writes)
    if dropped:
        dropped = tuple(dropped)
        for kind, ref, _key, _k, _meta in writes:  # the same references: one tuple
            if kind == "grads" and len(ref) == len(dropped) and all(
                    a is b for a, b in zip(ref, dropped)):
                dropped = ref
        src.add(f"for r in {src.name(dropped, 'w')}:")
        src.add("    r()._grad = None")
    src.add(f"outs = {src.name(entry.program, 'program')}.runner()(env)")
    for kind, ref, key, k, meta in writes:
        if kind == "grads":  # new gradients of one dtype and device: one loop
            made = (f"{src.name(Tensor, 'Tensor')}._make(o, {src.name(meta[0], 'dt')}, "
                    f"{src.name(meta[1], 'dev')})")
            if k == tuple(range(k[0], k[0] + len(k))):  # consecutive outputs: a slice
                src.add(f"for r, o in zip({src.name(ref, 'w')}, outs[{k[0]}:{k[-1] + 1}]):")
            else:
                src.add(f"for r, k in zip({src.name(ref, 'w')}, {src.name(k, 'w')}):")
                src.add("    o = outs[k]")
            if meta[2]:
                src.add(f"    g = r()._grad = {made}")
                src.add(f"    g._storage = {src.name(engine, 'engine')}._SHARED")
            else:
                src.add(f"    r()._grad = {made}")
            continue
        owner = f"{src.name(ref, 'w')}()"
        if kind == "data":
            src.add(f"o = {owner}")
            src.add(f"o._data = outs[{k}]")
            src.add("if o._storage is not None:")
            src.add(f"    o._storage.version = {src.name(engine, 'engine')}.tick()")
        elif kind == "grad_new":
            make = f"{src.name(Tensor, 'Tensor')}._make"
            made = f"{make}(outs[{k}], {src.name(meta[0], 'dt')}, {src.name(meta[1], 'dev')})"
            if meta[2]:
                src.add(f"g = {owner}._grad = {made}")
                src.add(f"g._storage = {src.name(engine, 'engine')}._SHARED")
            else:
                src.add(f"{owner}._grad = {made}")
        elif kind == "grad_data":
            src.add(f"{owner}._grad._data = outs[{k}]")
        elif kind == "grad_none":
            src.add(f"{owner}._grad = None")
        else:
            src.add(f"{owner}.state[{key[0]!r}][{key[1]!r}] = outs[{k}]")
    if uses_args:
        src.add(f"{args_now}[0] = None")
    result = entry.result
    if type(result) is OutTensor:
        src.add(f"return {src.name(Tensor, 'Tensor')}._make(outs[{result.k}], "
                f"{src.name(result.dtype, 'dt')}, {src.name(result.device, 'dev')})")
    else:
        src.add(f"return {src.name(_rebuild, 'rebuild')}({src.name(result, 'res')}, outs)")
    return src.function("def replay(leaves, run=True):", (True,))


def guards_hold(data, data_shapes, grads, grad_shapes, fresh, alive, checks, training,
                not_training, modules) -> bool:
    """Whether the tensors a replay reads are alive with the shapes recorded (``data``
    with ``data_shapes``; ``grads``: their gradients, with ``grad_shapes``; the shapes
    one flat tuple, each a rank and its sizes), those
    whose gradient the step makes anew have none (``fresh``), those it writes are alive
    (``alive``), each of ``checks`` (optimizers) holds, and each module has its training
    flag (``training``, ``not_training``: references; ``modules``: (reference, flag))
    (:func:`fastnn.capture.build._guards`)."""
    k = 0
    for r in data:
        t = r()
        n = data_shapes[k]
        if t is None or tuple(t._data.shape) != data_shapes[k + 1:k + 1 + n]:
            return False
        k += n + 1
    k = 0
    for r in grads:
        t = r()
        n = grad_shapes[k]
        if t is None or t._grad is None or \
                tuple(t._grad._data.shape) != grad_shapes[k + 1:k + 1 + n]:
            return False
        k += n + 1
    for r in fresh:
        t = r()
        if t is None or t._grad is not None:
            return False
    for r in alive:
        if r() is None:
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


def _deref(refs) -> list:
    """The objects of weak references (the parameters of an optimizer's group)."""
    return [r() for r in refs]


def _grouped(writes) -> list:
    """``writes`` with each run of three or more new gradients of one dtype, device and
    sharing as one write ``("grads", (ref, ...), None, (output index, ...), meta)``: two
    tuples, not a pair each (~56 bytes a gradient for as long as the program lives)."""
    out: list = []
    run: list = []

    def flush():
        if len(run) >= 3:
            out.append(("grads", tuple(w[1] for w in run), None, tuple(w[3] for w in run),
                        run[0][4]))
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


def _input_code(src, bind, value, leaves, rates) -> str:
    """The expression for one program input in the generated replay."""
    if bind is None:  # a constant of the recording
        return src.name(value, "c")
    kind = bind[0]
    if kind == "arg":
        n = bind[1]
        return f"leaves[{n}]._data" if isinstance(leaves[n], Tensor) else f"leaves[{n}]"
    if kind == "draw":
        return f"int(draws[{bind[1]}])"
    if kind == "scalar":
        _, what, oref, gi, prefs = bind
        if what == "step":
            return f"{src.name(oref, 'o')}().state[{id(prefs[0]())!r}]['step']"
        local = rates.get((id(oref), gi))
        if local is None:
            local = rates[(id(oref), gi)] = f"rates{len(rates)}"
            src.add(f"o = {src.name(oref, 'o')}()")
            src.add(f"{local} = o.lrs_and_decays(o.param_groups[{gi}], "
                    f"{src.name(_deref, 'deref')}({src.name(prefs, 'p')}))")
        return f"{local}[{0 if what == 'lrs' else 1}]"
    ref = src.name(bind[1], "r")
    if kind == "data":
        return f"{ref}()._data"
    if kind == "grad":
        return f"{ref}()._grad._data"
    return f"{ref}().state[{bind[2][0]!r}][{bind[2][1]!r}]"
