"""A small program replayed as data (fastnn.api.program_vm) makes the calls the
straight-line interpreter makes, on the same values, and drops each value at the same
point; programs it cannot name in bytes stay straight-line code."""

import gc
import weakref
from types import SimpleNamespace

import pytest

from fastnn.api import program_derive, program_vm
from fastnn.api.program import NO_KWARGS, Call, Program, Seq, Slot, interpreter


class Value:
    """A weakly referenceable stand-in for an array."""

    def __init__(self, tag):
        self.tag = tag

    def __repr__(self):
        return f"Value({self.tag!r})"


def _device(log, watched):
    def note(name, *args, **kwargs):
        alive = tuple(sorted(k for k, ref in watched.items() if ref() is not None))
        log.append((name, _tags(args), _tags(tuple(sorted(kwargs.items()))), alive))

    def add(a, b):
        note("add", a, b)
        return Value(("add", a.tag, b.tag))

    def scale(a, by=1.0, bias=None):
        note("scale", a, by=by, bias=bias)
        return Value(("scale", a.tag, by, getattr(bias, "tag", bias)))

    def pair(a):
        note("pair", a)
        return Value(("first", a.tag)), (Value(("second", a.tag)), None, Value("third"))

    def stack(items, shape, flags):
        note("stack", items, shape, flags)
        return Value(("stack", tuple(getattr(v, "tag", v) for v in items), shape,
                      tuple(flags)))

    def assign(dst, src):
        note("assign", dst, src)

    def many(a, b, c, d):
        note("many", a, b, c, d)
        return Value(("many", a.tag, b.tag, c.tag, d.tag))

    def wide(*args):  # five to seven operands
        note("wide", *args)
        return Value(("wide",) + tuple(getattr(a, "tag", a) for a in args))

    ops = SimpleNamespace(add=add, scale=scale, pair=pair, stack=stack, assign=assign,
                          many=many, wide=wide)
    return SimpleNamespace(ops=ops)


def _program(device):
    s = Slot
    calls = [
        Call(device, "add", [s(0), s(1)], {}, s(3)),
        Call(device, "scale", [s(3)], {"by": 2.0, "bias": s(2)}, s(4)),
        Call(device, "pair", [s(4)], {}, Seq(tuple, [s(5), Seq(tuple, [s(6), None, s(7)])])),
        Call(device, "stack", [Seq(list, [s(5), s(6), 3]), (2, 3), [None, None]], {}, s(8)),
        Call(device, "assign", [s(1), s(8)], {}, None),
        Call(device, "add", [s(8), s(8)], {}, s(9)),  # nobody reads it: dropped at once
        Call(device, "many", [s(0), s(2), s(4), s(8)], {}, s(10)),
        Call(device, "wide", [s(0), s(2), s(4), s(8), 5.0], {}, s(11)),
        Call(device, "wide", [s(0), s(2), s(4), s(8), s(11), 6], {}, s(12)),
        Call(device, "wide", [s(0), s(2), s(4), s(8), s(11), s(12), None], {}, s(13)),
    ]
    return Program("test", calls, [0, 1, 2, 0], [13, 10, 8, 1], {})


def _run(make):
    log, watched = [], {}
    device = _device(log, watched)
    program = _program(device)
    runner = make(program)
    env = [Value("x"), Value("y"), Value("z"), None]
    env[3] = env[0]
    outs = runner(env)
    return runner, [o.tag for o in outs], log


def _alive_run(make):
    """Which values the hooks see alive at each call, by weak reference."""
    log, watched = [], {}
    device = _device(log, watched)
    program = _program(device)
    runner = make(program)
    real = {name: getattr(device.ops, name) for name in ("add", "scale", "pair", "many")}

    def watching(name):
        def hook(*args, **kwargs):
            out = real[name](*args, **kwargs)
            for n, v in enumerate(out if isinstance(out, tuple) else (out,)):
                if isinstance(v, Value):
                    watched[f"{name}{len(log)}.{n}"] = weakref.ref(v)
            return out
        return hook

    for name in real:
        setattr(device.ops, name, watching(name))
    runner = make(program)
    env = [Value("x"), Value("y"), Value("z"), None]
    env[3] = env[0]
    runner(env)
    gc.collect()
    alive = [entry[3] for entry in log]
    assert alive[-4] == ("scale2.0",), alive  # (the first add's and the pair's went)
    return alive


def _tags(value):
    """``value`` with each Value as its tag (lists and tuples kept apart)."""
    if isinstance(value, Value):
        return ("Value", value.tag)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_tags(v) for v in value)
    return value


def _straight(program):
    saved = program_vm.MAX_CALLS
    program_vm.MAX_CALLS = -1
    try:
        return interpreter(program)
    finally:
        program_vm.MAX_CALLS = saved


def test_data_replay_makes_the_calls_of_the_straight_line_code():
    runner, outs, log = _run(interpreter)
    assert type(runner) is program_vm.Interpreted
    straight, want, want_log = _run(_straight)
    assert type(straight) is not program_vm.Interpreted
    assert outs == want and len(log) == len(want_log) == 10
    assert log == want_log
    stack = next(entry for entry in log if entry[0] == "stack")
    assert stack[1][1][0] == "list" and stack[1][3] == ("list", None, None)


def test_data_replay_drops_each_value_where_the_straight_line_code_does():
    assert _alive_run(interpreter) == _alive_run(_straight)


def test_a_literal_list_is_made_anew_at_each_call():
    seen = []
    device = SimpleNamespace(ops=SimpleNamespace(keep=lambda items: seen.append(items) or 1))
    program = Program("t", [Call(device, "keep", [[None, None]], {}, Slot(1))], [0], [1], {})
    runner = interpreter(program)
    runner([0])
    runner([0])
    assert seen == [[None, None], [None, None]] and seen[0] is not seen[1]


@pytest.mark.parametrize("wide", [False, True])
def test_what_bytes_cannot_name_stays_straight_line_code(wide):
    device = SimpleNamespace(ops=SimpleNamespace(add=lambda a, b: a + b))
    if wide:  # more values alive at once than a byte names
        n = program_vm.LIMIT + 5
        calls = [Call(device, "add", [Slot(i), Slot(i)], {}, Slot(n + i)) for i in range(n)]
        program = Program("t", calls, list(range(n)), [n + i for i in range(n)], {})
    else:  # more calls than MAX_CALLS
        n = program_vm.MAX_CALLS + 1
        calls = [Call(device, "add", [Slot(i), Slot(0)], {}, Slot(i + 1)) for i in range(n)]
        program = Program("t", calls, [0], [n], {})
    runner = interpreter(program)
    assert type(runner) is not program_vm.Interpreted
    outs = runner(list(range(n)) if wide else [1])
    assert outs == ([2 * i for i in range(n)] if wide else [n + 1])


def _packed_and_read_back(program):
    """``program`` packed (its replay built first, as a compiled step's is) and read back:
    (how many parts its packed form has, its text before, its text after)."""
    for call in program.calls:  # as a recording makes them
        call.kwargs = call.kwargs or NO_KWARGS
    program.planner = None
    program._run = interpreter(program)
    program._resolved = program.tables()
    calls, before = program.calls, program.text()
    program.pack()
    size = len(program._packed)
    assert not hasattr(program, "_calls")
    after = program.text()
    assert len(program.calls) == len(calls)
    assert all(map(program_derive._same_call, program.calls, calls))
    return size, before, after


def test_a_packed_program_reads_its_calls_back_from_its_data_replay():
    program = _program(_device([], {}))
    program.describe = {i: f"float32[{i}]" for i in (0, 1, 2, 3, 5, 8)}
    size, before, after = _packed_and_read_back(program)
    assert size == 3  # (bytes, references, the data replay): calls read back from it
    assert after == before and "stack([%5, %6, 3], (2, 3), [None, None])" in after
    assert program.describe[5] == "float32[5]" and 4 not in program.describe


def test_calls_the_data_replay_does_not_tell_are_packed_whole():
    program = _program(_device([], {}))
    program.calls[4].args = [Slot(1), Seq(list, [7, 8])]  # a Seq of no slots reads back
    size, before, after = _packed_and_read_back(program)  # as a plain list
    assert size == 2 and after == before
