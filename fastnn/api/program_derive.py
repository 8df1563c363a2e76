"""A program's calls read back from its replay as data, for its packed description.

A compiled step keeps its program's description (the calls, the slots' descriptions,
layouts, aliases: :class:`fastnn.api.program.Program`) packed while only its replay runs
(:mod:`fastnn.api.program_pack`), to print it or build the replay anew. Where the replay
is data (:class:`fastnn.api.program_vm.Interpreted`), its code already says every call:
the hook, the operands, the constants, the lists built. What it does not say is packed
beside it: each call's result template (which slot it makes), the inputs and outputs,
the hook names no function's ``__name__`` tells, the descriptions, layouts and aliases.
Measured on the MLP step of ``benchmarks/bench_models.py``: 1.2 -> 0.5 KB packed.

:func:`pack` reads the calls back at once and packs this way only where they come back
equal to the program's own (the same names, templates, constants, keyword arguments);
else it returns None (the program is then pickled whole).
"""

from __future__ import annotations

from types import MappingProxyType

from fastnn.api import program_pack
from fastnn.api.program_calls import NO_KWARGS, Call, Seq, Slot, literal
from fastnn.api.program_vm import BUILD, DROP, DROP1, ITEM, KWCALL, Interpreted

_NO_SLOTS = frozenset()  # (one for every program: each empty frozenset is 216 bytes)


def pack(program, vm, by_value: tuple):
    """``(bytes, references, vm)`` for ``program`` (whose calls ``vm`` runs on one
    device), or None where its calls do not read back from ``vm`` exactly
    (``by_value``: :meth:`fastnn.api.program.Program.pack`'s, Layouts last)."""
    if type(vm) is not Interpreted or len(program.devices()) != 1:
        return None
    calls = program._calls
    device = program._devices[0]
    outs = tuple(map(_plain, (c.out for c in calls)))
    if _FAILED in outs:
        return None
    names: dict = {}  # hook index -> its name, where the function's own name differs
    order = _hooks_of(vm.code)
    if len(order) != len(calls):
        return None
    for f, call in zip(order, calls):
        if getattr(vm.hooks[f], "__name__", None) != call.name and \
                names.setdefault(f, call.name) != call.name:
            return None
    rest = (names, program._inputs, program._outputs, outs)
    try:
        back = _calls(vm, device, rest)
    except (IndexError, KeyError, TypeError, AttributeError):
        return None
    if len(back) != len(calls) or not all(map(_same_call, back, calls)):
        return None
    describe, layouts = program._describe, program._layouts
    if type(describe) is not dict or type(layouts) is tuple:  # (tuples: see unpack)
        return None
    parts = rest + (_texts(describe), _layouts(layouts, describe, by_value[-1]),
                    program._aliases)
    return program_pack.pack(parts, by_value) + (vm,)


def unpack(packed, device, layouts_class) -> tuple:
    """The program's fields (``Program._PACKED``'s order) that :func:`pack` packed
    (``device``: the one its calls run on; ``layouts_class``:
    :class:`fastnn.api.program.Layouts`)."""
    blob, refs, vm = packed
    names, inputs, outputs, outs, describe, layouts, aliases = program_pack.unpack(
        (blob, refs))
    if type(describe) is tuple:  # (see _texts)
        texts, index = describe
        describe = {i: texts[k - 1] for i, k in enumerate(index) if k}
    if type(layouts) is tuple:  # (see _layouts)
        other, unknown = layouts
        layouts = layouts_class(describe, other, frozenset(unknown) if unknown else _NO_SLOTS)
    calls = _calls(vm, device, (names, inputs, outputs, outs))
    return calls, describe, layouts, aliases, inputs, outputs


def _texts(describe):
    """``describe`` (slot -> ``"float32[64, 10]"``, slots ascending) as ``(texts,
    index)``: each distinct text once, and a byte per slot up to the last, 0 for none or
    one more than its text's place (a dict packed kept ~0.1 KB more for the MLP step);
    else ``describe`` itself."""
    if not describe:
        return describe
    keys = list(describe)
    if keys != sorted(keys) or keys[0] < 0 or keys[-1] > 4095:
        return describe
    texts: dict = {}
    index = bytearray(keys[-1] + 1)
    for i, text in describe.items():
        k = texts.setdefault(text, len(texts) + 1)
        if type(text) is not str or k > 255:
            return describe
        index[i] = k
    return tuple(texts), bytes(index)


def _layouts(layouts, describe, layouts_class):
    """A :class:`fastnn.api.program.Layouts` (``layouts_class``) over ``describe`` as its
    other two fields (rebuilt over the description unpacked); any other mapping
    itself."""
    if type(layouts) is layouts_class and layouts._describe is describe:
        return layouts._other, tuple(sorted(layouts._unknown))
    return layouts


def _hooks_of(code: bytes) -> list:
    """The hook index of each call, in order."""
    out = []
    for op, operands in _instructions(code):
        if op < BUILD:
            out.append(op)
        elif op == KWCALL:
            out.append(operands[0])
    return out


def _instructions(code: bytes):
    """(instruction, operands) of ``code`` (:mod:`fastnn.api.program_vm`'s format): a
    call's operands ``(f, args, names, kwargs, out)``."""
    n, end = 0, len(code)
    while n < end:
        op = code[n]
        if op < BUILD or op == KWCALL:
            f = code[n + 1] if op == KWCALL else op
            n += 2 if op == KWCALL else 1
            k = code[n]
            args = code[n + 1:n + 1 + k]
            n += 1 + k
            names, kw = None, b""
            if op == KWCALL:
                names, m = code[n], code[n + 1]
                kw = code[n + 2:n + 2 + m]
                n += 2 + m
            yield op, (f, args, names, kw, code[n])
            n += 1
        elif op == BUILD:
            k = code[n + 2]
            yield op, (code[n + 1], code[n + 3:n + 3 + k], code[n + 3 + k])
            n += 4 + k
        elif op == ITEM:
            yield op, code[n + 1:n + 4]
            n += 4
        elif op == DROP:
            n += 2 + code[n + 1]
        elif op == DROP1:
            n += 2
        else:
            raise KeyError(op)


def _calls(vm, device, rest) -> list:
    """The calls ``vm`` makes, as :class:`Call` templates (see the module)."""
    names, inputs, _outputs, outs = rest
    slots: dict = {}

    def slot(i):
        found = slots.get(i)
        if found is None:
            found = slots[i] = Slot(i)
        return found

    reg: dict = {n: slot(i) for n, i in enumerate(inputs)}
    base = len(inputs)
    for k, value in enumerate(vm.consts):
        reg[base + k] = value
    calls = []
    for op, operands in _instructions(vm.code):
        if op == BUILD:
            kind, items, o = operands
            templates = [reg[a] for a in items]
            if kind == 0 and not any(type(t) in (Slot, Seq) for t in templates):
                reg[o] = templates  # a list of constants, made at each call
            else:
                reg[o] = Seq(list if kind == 0 else tuple, templates)
        elif op == ITEM:
            s, k, o = operands
            reg[o] = reg[s].items[k]
        else:
            f, args, kw_names, kw, o = operands
            out = _template(outs[len(calls)], slot)
            kwargs = NO_KWARGS if kw_names is None else dict(
                zip(reg[kw_names], (reg[a] for a in kw)))
            name = names.get(f) or vm.hooks[f].__name__
            calls.append(Call(device, name, [reg[a] for a in args], kwargs, out))
            reg[o] = out
    return calls


_FAILED = object()


def _plain(out):
    """A call's result template as plain data: a slot its number, a list or tuple of
    them ``(is a list, (item, ...))``, None itself, a list or tuple of literals (a part
    that holds no array) ``(value,)``; _FAILED for anything else."""
    if type(out) is Slot:
        return out.i
    if out is None:
        return None
    if type(out) is Seq:
        items = tuple(map(_plain, out.items))
        return _FAILED if _FAILED in items else (out.kind is list, items)
    if type(out) in (list, tuple) and all(map(literal, out)):
        return (out,)
    return _FAILED


def _template(out, slot):
    """The result template :func:`_plain` gave ``out`` for."""
    if type(out) is int:
        return slot(out)
    if out is None:
        return None
    if len(out) == 1:
        return out[0]
    kind, items = out
    return Seq(list if kind else tuple, [_template(t, slot) for t in items])


def _same_call(a: Call, b: Call) -> bool:
    if a.device is not b.device or a.name != b.name or not _same(a.args, b.args) or \
            not _same(a.out, b.out):
        return False
    if type(b.kwargs) is MappingProxyType:
        return b.kwargs is NO_KWARGS and a.kwargs is NO_KWARGS
    return type(a.kwargs) is type(b.kwargs) and list(a.kwargs) == list(b.kwargs) and \
        all(_same(a.kwargs[k], b.kwargs[k]) for k in b.kwargs)


def _same(a, b) -> bool:
    """Whether two templates are equal: slots by number, lists and Seqs item by item, a
    literal by type and value, any other constant by identity."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is Slot:
        return a.i == b.i
    if kind is Seq:
        return a.kind is b.kind and _same(a.items, b.items)
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(map(_same, a, b))
    return a is b or (literal(a) and a == b)
