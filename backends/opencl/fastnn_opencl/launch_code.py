"""The launch list of a traced program (:mod:`fastnn_opencl.launch_list`) as Python source.

Every buffer a launch reads or writes belongs to one of four kinds: ``in`` (an input's:
the replay's array may bring another buffer, set into the kernels when it changes),
``fb`` (made by a call that stays a hook call: set after that call at each replay),
``rot`` (leaves the step as an output: allocated afresh at each replay) and ``fixed``
(made in the step and kept inside it: the trace's own buffer, set once). An optimizer
update's launches also get their scalar arguments (learning rates, weight decays, bias
corrections from the step count) from the numbers the replay brings, set where they
changed (:data:`fastnn_opencl.optim.REPLAYS`).
"""

from __future__ import annotations

import bisect
import sys
import threading

from fastnn.api.program import Seq, Slot, slots_in
from fastnn_opencl import launch_gate, runtime
from fastnn_opencl.fast_launch import set_value
from fastnn_opencl.runtime import CLArray

_counter = [0]


class ReplayError(RuntimeError):
    """A call of a compiled step failed while its launch list replayed."""


def _classify(program, values, traced, fits):
    """(buffer id -> kind key, the buffers of each key, the calls that must not fit)."""
    key_of, buffer_of = {}, {}

    def note(buf, key):
        if id(buf) not in key_of:
            key_of[id(buf)] = key
            buffer_of[key] = buf

    for i in program.inputs:
        if type(values[i]) is CLArray:
            note(values[i].data, ("in", i))
    launched: set[int] = set()  # buffers some kept launch passes
    made_by: dict[int, int] = {}  # buffer id -> the kept call whose result brought it
    for n, (call, t) in enumerate(zip(program.calls, traced)):
        if fits[n]:
            for launch in t.launches:
                for arg in launch[4]:
                    if isinstance(arg, runtime.cl().MemoryObjectHolder):
                        note(arg, ("fixed", id(arg)))
                        launched.add(id(arg))
        for i in slots_in(call.out):
            value = values[i]
            if type(value) is CLArray and id(value.data) not in key_of:
                note(value.data, ("fixed", id(value.data)) if fits[n] else ("fb", i))
                if fits[n]:
                    made_by[id(value.data)] = n
    bad = set()
    for i in program.outputs:
        value = values[i]
        if type(value) is CLArray and key_of[id(value.data)][0] == "fixed" and \
                id(value.data) not in launched:
            bad.add(made_by[id(value.data)])  # not written by a launch: a hook call
    return key_of, buffer_of, bad


def build(program, trace, slow, owner):
    """The replay function of a traced program (see the module)."""
    values, traced = trace
    fits = [t.other is None for t in traced]
    while True:
        key_of, buffer_of, bad = _classify(program, values, traced, fits)
        if not bad:
            break
        for n in bad:
            fits[n] = False
    rotated = {id(values[i].data) for i in program.outputs
               if type(values[i]) is CLArray and key_of[id(values[i].data)][0] == "fixed"}
    for buf_id in rotated:
        key_of[buf_id] = ("rot", buf_id)
        buffer_of[("rot", buf_id)] = buffer_of.pop(("fixed", buf_id))
    return _Writer(program, values, traced, fits, key_of, buffer_of).function(slow, owner)


class _Writer:
    def __init__(self, program, values, traced, fits, key_of, buffer_of):
        self.program, self.values, self.traced, self.fits = program, values, traced, fits
        self.key_of, self.buffer_of = key_of, buffer_of
        self.names: dict = {}
        self.users: dict = {}  # dynamic key -> [(kernel name, position)]
        self.fb_slots: set[int] = set()
        self.kernels = []  # [(name, call index)]
        self.hold = []  # everything the fixed launches use, kept alive
        self.position = 0  # of the launch or hook call being written
        self.lifetimes: dict = {}  # fixed buffer id -> [first use, last use]
        self.fixed_args: list = []  # (kernel, position, buffer id)
        self.fixed_values: list = []  # (bound name, array) passed to hook calls
        self.made: set = set()  # the buffers the kept calls allocated (shared)

    def use(self, buf_id) -> None:
        found = self.lifetimes.get(buf_id)
        if found is None:
            self.lifetimes[buf_id] = [self.position, self.position]
        else:
            found[1] = self.position

    def bind(self, value, prefix="c") -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def buffer_var(self, key) -> str:
        kind = key[0]
        if kind == "in":
            return f"s{key[1]}.data"
        if kind == "fb":
            return f"bf{key[1]}"
        return f"br{key[1]}"

    def value_expr(self, i) -> str:
        if i in self.program.inputs or i in self.fb_slots:
            return f"s{i}"
        value = self.values[i]
        if type(value) is not CLArray:
            return self.bind(value)
        key = self.key_of[id(value.data)]
        if key[0] == "fixed":
            name = self.bind(value)
            self.use(id(value.data))
            self.fixed_values.append((name, value))
            return name
        dev = self.bind(value.dev)
        return (f"V({self.buffer_var(key)}, {value.shape!r}, {value.strides!r}, "
                f"{value.offset!r}, {value.dtype!r}, {dev})")

    def template(self, template) -> str:
        if type(template) is Slot:
            return self.value_expr(template.i)
        if type(template) is Seq:
            inner = "".join(f"{self.template(item)}, " for item in template.items)
            return f"[{inner}]" if template.kind is list else f"({inner})"
        if template is None or type(template) in (bool, int):
            return repr(template)
        return self.bind(template)

    def function(self, slow, owner):
        program, values = self.program, self.values
        body: list[str] = []
        queues = []
        for n, (call, t) in enumerate(zip(program.calls, self.traced)):
            body.append(f"    #call {n}")
            if not self.fits[n]:
                self._hook_call(n, call, body)
                continue
            if call.name == "assign" and len(call.args) == 2 and type(
                    call.args[0]) is Slot and type(call.args[1]) is Slot and \
                    call.args[0].i == call.args[1].i:
                continue  # a tensor written into itself
            clones = [launch[0] for launch in t.launches]
            if t.scalars is not None:
                self._scalar_sets(n, call, t, clones, body)
            for clone, queue, global_size, local_size, args in t.launches:
                self.position += 1
                kernel = self.bind(clone, "K")
                self.kernels.append((kernel, n))
                if queue not in queues:
                    queues.append(queue)
                q = f"Q{queues.index(queue)}"
                body.append(f"    E({q}, {kernel}, {self.bind(tuple(global_size), 'G')}, "
                            f"{self.bind(local_size, 'L')})")
                for position, arg in enumerate(args):
                    key = self.key_of.get(id(arg)) if isinstance(
                        arg, runtime.cl().MemoryObjectHolder) else None
                    if key is None:
                        continue
                    if key[0] == "fixed":
                        self.hold.append(arg)
                        self.use(id(arg))
                        self.fixed_args.append((clone, position, id(arg)))
                    else:
                        self.users.setdefault(key, []).append((kernel, position))
            self.made.update(id(b) for b in t.allocated)  # its results and scratch
            for i in slots_in(call.out):
                if i in program.outputs and type(values[i]) is CLArray and \
                        self.key_of[id(values[i].data)][0] != "fixed":
                    body.append(f"    s{i} = {self.value_expr(i)}")
                    self.fb_slots.add(i)  # named from here on
        self._share()
        head = self._head()
        for k, q in enumerate(queues):
            self.names[f"Q{k}"] = q
        tail = ["    " + "".join(f"Q{k}.flush(); " for k in range(len(queues))).rstrip(),
                "    return [" + "".join(f"{self.value_expr(i)}, "
                                        for i in program.outputs) + "]"]
        body = self._dynamic_sets(body)
        if launch_gate.GATE and len(queues) == 1:
            body = launch_gate.gated(body)
            self.names.update(UE=runtime.cl().UserEvent, MK=runtime.cl().enqueue_marker,
                              CTX=queues[0].context)
        lines = ["def fast(env):"] + head + body + tail
        _counter[0] += 1
        filename = f"<fnn.compile launch list {program.name} #{_counter[0]}>"
        starts = [(k + 1, int(line.rsplit(" ", 1)[1])) for k, line in enumerate(lines)
                  if line.startswith("    #call ")]
        lines_of = [line for line, _ in starts]
        scope = dict(self.names)
        scope.update(V=CLArray, E=runtime.cl().enqueue_nd_range_kernel, slow=slow,
                     OWNER=owner, get_ident=threading.get_ident, LAST=[None] * len(
                         program.inputs))
        exec(compile("\n".join(lines), filename, "exec"), scope)  # noqa: S102
        fast, hold = scope["fast"], self.hold
        del self.names
        run = _guarded(fast, filename, lines_of, [n for _, n in starts], program, hold)
        run.source = "\n".join(lines)  # what a replay runs, for reading
        run.launched = [program.calls[n].name for _, n in self.kernels]  # each launch's call
        return run

    def _share(self) -> None:
        """Point the launches and hook calls at shared buffers for the arrays the step
        makes (:mod:`fastnn_opencl.launch_memory`); the trace's own are let go."""
        from fastnn_opencl.launch_memory import share

        buffers = {id(b): b for b in self.hold}
        lifetimes = {b: (*self.lifetimes[b], buffers[b].size) for b in self.made
                     if b in self.lifetimes and b in buffers and
                     self.key_of.get(b, ("fixed",))[0] == "fixed"}
        if not lifetimes:
            return
        dev = next(v.dev for v in self.values.values() if type(v) is CLArray)
        assigned = share(lifetimes, dev.pool.allocate)
        for clone, position, buf_id in self.fixed_args:
            if buf_id in assigned:
                clone.set_arg(position, assigned[buf_id])
        for name, value in self.fixed_values:
            if id(value.data) in assigned:
                self.names[name] = CLArray(assigned[id(value.data)], value.shape,
                                           value.strides, value.offset, value.dtype, value.dev)
        kept = {id(b): b for b in self.hold if id(b) not in assigned}
        kept.update((id(b), b) for b in assigned.values())
        self.hold = list(kept.values())

    def _scalar_sets(self, n, call, t, clones, body) -> None:
        """An optimizer update's scalar arguments, recomputed from the call's numbers that
        a replay brings (a schedule's learning rate, the step count) where they changed."""
        dynamic, args = [], []
        for a in call.args:
            if type(a) is Slot and type(self.values[a.i]) is not CLArray:
                expr = self.value_expr(a.i)
                args.append(expr)
                if expr.startswith("s"):  # brought by the replay, not a constant
                    kind = type(self.values[a.i])
                    dynamic.append(f"{expr}[:]" if kind is list else expr)
            else:
                args.append("None" if type(a) in (Slot, Seq) else self.template(a))
        if not dynamic:
            return  # the clones keep the numbers the trace set
        start, scalars = t.scalars
        fn, setter = self.bind(scalars, "H"), self.bind(_setter(clones, start), "D")
        last = self.bind([None], "DK")
        body.append(f"    k{n} = ({', '.join(dynamic)},)")
        body.append(f"    if k{n} != {last}[0]:")
        body.append(f"        {last}[0] = k{n}")
        body.append(f"        {setter}({fn}({', '.join(args)}))")

    def _hook_call(self, n, call, body) -> None:
        self.position += 1
        fn = self.bind(getattr(call.device.ops, call.name), "f")
        args = [self.template(a) for a in call.args]
        args += [f"{k}={self.template(v)}" for k, v in call.kwargs.items()]
        expr = f"{fn}({', '.join(args)})"
        if type(call.out) is Slot:
            body.append(f"    s{call.out.i} = {expr}")
        elif type(call.out) is Seq:
            body.append(f"    _r = {expr}")
            body.extend(_unpack(call.out, "_r"))
        else:
            body.append(f"    {expr}")
        for i in slots_in(call.out):
            self.fb_slots.add(i)
            value = self.values[i]
            if type(value) is CLArray and self.key_of.get(id(value.data)) == ("fb", i):
                body.append(f"    bf{i} = s{i}.data")
                body.append(f"    #sets fb {i}")

    def _head(self) -> list[str]:
        program, values = self.program, self.values
        lines = ["    if get_ident() != OWNER:", "        return slow(env)"]
        if program.inputs:
            lines.append("    " + "".join(f"s{i}, " for i in program.inputs) + "= env")
        arrays = [i for i in program.inputs if type(values[i]) is CLArray]
        checks = [f"s{i}.offset != {values[i].offset}" for i in arrays]
        for i in arrays:
            key = self.key_of[id(values[i].data)]
            if key != ("in", i):
                checks.append(f"s{i}.data is not s{key[1]}.data")
        distinct = len({id(values[i].data) for i in arrays})
        if len(arrays) > 1:
            ids = ", ".join(f"id(s{i}.data)" for i in arrays)
            checks.append(f"len({{{ids}}}) != {distinct}")
        if checks:
            lines.append("    if " + " or ".join(checks) + ":")
            lines.append("        return slow(env)")
        return lines

    def _dynamic_sets(self, body) -> list[str]:
        """The body with each dynamic buffer's set_args where it becomes known."""
        out: list[str] = []
        for n, i in enumerate(self.program.inputs):
            key = ("in", i)
            if key not in self.users:
                continue
            out.append(f"    bi{i} = s{i}.data")
            out.append(f"    if bi{i} is not LAST[{n}]:")
            out.append(f"        LAST[{n}] = bi{i}")
            out.extend(f"        {k}.set_arg({p}, bi{i})" for k, p in self.users[key])
        for key, buf in self.buffer_of.items():
            if key[0] != "rot":
                continue
            alloc = self.bind(buf.size, "N")
            pool = self.bind(self._device().pool.allocate, "A")
            var = self.buffer_var(key)
            out.append(f"    {var} = {pool}({alloc})")
            out.extend(f"    {k}.set_arg({p}, {var})" for k, p in self.users.get(key, []))
        for line in body:
            if line.startswith("    #sets fb "):
                i = int(line.rsplit(" ", 1)[1])
                out.extend(f"    {k}.set_arg({p}, bf{i})" for k, p in self.users.get(
                    ("fb", i), []))
            else:
                out.append(line)
        return out

    def _device(self):
        for value in self.values.values():
            if type(value) is CLArray:
                return value.dev
        raise RuntimeError("opencl launch list: a program without arrays")


def _setter(kernels: list, start: int):
    """values -> None: set each kernel's scalar arguments from ``start`` to its tuple of
    ``values``, those that changed since the last call (a zero always: -0.0 == 0.0)."""
    last: list = [None] * len(kernels)

    def set_scalars(values) -> None:
        for k, (kernel, new) in enumerate(zip(kernels, values)):
            old = last[k]
            if old is None:
                for j, value in enumerate(new):
                    set_value(kernel, start + j, value)
            else:
                for j, value in enumerate(new):
                    if value != old[j] or not value:
                        set_value(kernel, start + j, value)
            last[k] = new
    return set_scalars


def _unpack(template, expr) -> list[str]:
    out = []
    for k, item in enumerate(template.items):
        if type(item) is Slot:
            out.append(f"    s{item.i} = {expr}[{k}]")
        elif type(item) is Seq:
            out.extend(_unpack(item, f"{expr}[{k}]"))
    return out


def _guarded(fast, filename, lines_of, calls_of, program, hold):
    """``fast`` whose errors name the call of the program that raised them."""

    def run(env):
        try:
            return fast(env)
        except Exception as exc:
            tb, line = sys.exc_info()[2], None
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == filename:
                    line = tb.tb_lineno
                tb = tb.tb_next
            if line is None:
                raise
            k = max(bisect.bisect_right(lines_of, line) - 1, 0)
            call = program.calls[calls_of[k]]
            raise ReplayError(
                f"fnn.compile: replaying {program.name} on opencl failed at call "
                f"{calls_of[k]} of {len(program.calls)}, {call.name}: "
                f"{type(exc).__name__}: {exc}") from exc

    run.hold = hold  # the launches' buffers live as long as the replay
    run.__wrapped__ = fast
    return run
