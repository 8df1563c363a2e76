"""Fusion of a recorded program's elementwise chains into ``fused_elementwise`` calls.

An expression is a tuple tree: ``("in", k)`` is the k-th input array, ``("const", v)`` a
Python number, and ``(op, *operands)`` one of :data:`FUSABLE`'s hooks applied to the
operands in the order the hook takes them. Every input array has the result's shape and
floating dtype, except a ``where`` condition made inside the expression by a comparison.

:func:`fuse` replaces each chain of elementwise calls whose intermediate values are read
once, by the next call of the chain, and nowhere else, with one call; it runs only for a
backend that implements ``fused_elementwise`` itself (for the others, the composite
:func:`evaluate` would only add work; a backend whose hook is that composite marks it
with ``fused_elementwise.fuses = False``). A chain never reaches across an in-place write,
an optimizer step or a collective, since its calls run where its last call ran.
"""

from __future__ import annotations

import os

from fastnn.api.program import Call, Program, Seq, Slot, impure, slots_in

ENABLED = os.environ.get("FASTNN_FUSE", "1") != "0"
"""Whether compiled programs fuse (``FASTNN_FUSE=0`` turns it off, e.g. to compare)."""

UNARY = ("neg", "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
COMPARE = ("greater", "less", "equal")
FUSABLE = frozenset(UNARY + BINARY + COMPARE + ("where",))


def evaluate(ops, expr, inputs):
    """The expression with ``ops``' own hooks, one call per node: what the unfused calls
    gave, bit for bit (the composite of ``fused_elementwise``)."""
    kind = expr[0]
    if kind == "in":
        return inputs[expr[1]]
    if kind == "const":
        return expr[1]
    return getattr(ops, kind)(*[evaluate(ops, e, inputs) for e in expr[1:]])


def _meta(describe: dict, i: int):
    text = describe.get(i)  # "float32[32, 128]"
    if text is None:
        return None
    dtype, _, shape = text.partition("[")
    return dtype, shape


def planned(program: Program) -> Program:
    """What a program runs as: fused where it runs on one device whose backend implements
    ``fused_elementwise`` (and fusion is on), else itself."""
    devices = program.devices()
    if ENABLED and len(devices) == 1 and "fused_elementwise" in getattr(
            devices[0].backend, "implemented", ()) and getattr(
            devices[0].ops.fused_elementwise, "fuses", True):
        return fuse(program)
    return program


def fuse(program: Program) -> Program:
    """``program`` with its elementwise chains fused (see the module); the program itself
    when nothing fuses."""
    calls, describe = program.calls, program.describe
    uses: dict[int, int] = {}
    for call in calls:
        for i in slots_in(call.args) + slots_in(call.kwargs):
            uses[i] = uses.get(i, 0) + 1
    for i in program.outputs:
        uses[i] = uses.get(i, 0) + 2  # an output is never folded away
    barriers = []  # for each call, how many impure calls came before it
    count = 0
    for call in calls:
        barriers.append(count)
        count += impure(call)
    producer = {}
    for n, call in enumerate(calls):
        if type(call.out) is Slot:
            producer[call.out.i] = n
    fusable = [_fusable(call, describe) for call in calls]
    folded: set[int] = set()  # calls folded into a later call
    for n, call in enumerate(calls):
        if not fusable[n]:
            continue
        for arg in call.args:
            p = producer.get(arg.i) if type(arg) is Slot else None
            if p is not None and fusable[p] and uses.get(arg.i) == 1 and \
                    barriers[p] == barriers[n] and calls[p].device is call.device and \
                    (_meta(describe, arg.i) == _meta(describe, call.out.i) or
                     calls[p].name in COMPARE):
                folded.add(p)
    if not folded:
        return program
    out_calls = []
    exprs: dict[int, tuple] = {}  # slot of a folded call -> its expression (leaves: slots)
    for n, call in enumerate(calls):
        if n in folded:
            exprs[call.out.i] = _expr(call, exprs)
            continue
        if fusable[n] and any(type(a) is Slot and a.i in exprs for a in call.args):
            tree = _expr(call, exprs)
            leaves: list[int] = []
            numbered = _number(tree, leaves)
            out_calls.append(Call(call.device, "fused_elementwise",
                                  [numbered, Seq(list, [Slot(i) for i in leaves])], {},
                                  call.out))
        else:
            out_calls.append(call)
    fused = Program(program.name, out_calls, program.inputs, program.outputs, describe)
    fused.layouts = program.layouts  # a fused call's result keeps its recorded layout
    fused.aliases = program.aliases
    return fused


def _fusable(call, describe) -> bool:
    if call.name not in FUSABLE or call.kwargs or type(call.out) is not Slot:
        return False
    out = _meta(describe, call.out.i)
    if out is None:
        return False
    if call.name in COMPARE:  # a bool result: only as a where's condition, folded
        out = None
    elif not out[0].startswith("float"):
        return False
    for arg in call.args:
        if type(arg) is Slot:
            meta = _meta(describe, arg.i)
            if meta is None or (out is not None and meta != out and not (
                    call.name == "where" and arg is call.args[0])):
                return False
        elif type(arg) not in (int, float) or type(arg) is bool:
            return False
    if call.name in COMPARE:  # both operands of the compared dtype and shape
        metas = {_meta(describe, a.i) for a in call.args if type(a) is Slot}
        return len(metas) == 1 and next(iter(metas))[0].startswith("float")
    return True


def _expr(call, exprs) -> tuple:
    operands = []
    for arg in call.args:
        if type(arg) is Slot:
            operands.append(exprs.get(arg.i, ("slot", arg.i)))
        else:
            operands.append(("const", arg))
    return (call.name, *operands)


def _number(tree, leaves: list) -> tuple:
    """The tree with its ("slot", i) leaves numbered as inputs ("in", k)."""
    if tree[0] == "slot":
        if tree[1] not in leaves:
            leaves.append(tree[1])
        return ("in", leaves.index(tree[1]))
    if tree[0] == "const":
        return tree
    return (tree[0], *[_number(t, leaves) for t in tree[1:]])
