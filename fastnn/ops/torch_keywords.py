"""PyTorch's name ``input`` for the first argument of fastnn's functions.

fastnn's functions name their first argument after what it is (``x``, ``logits``,
``pred``); PyTorch's nearly all call it ``input``, and scripts pass it by that name:
Llama's generation calls ``F.cross_entropy(input=logits.transpose(1, 2), target=tokens,
reduction="none", ignore_index=pad_id)``. :func:`takes_input_keyword` gives a function
that takes ``input=`` for its first parameter too (``fastnn.functional`` and
``fastnn.NAME`` are made of these; a method's first argument is the tensor itself).

The wrapper is made with the function's own signature, as the autocast wrappers are
(:mod:`fastnn.ops.autocasting`), so that a call pays one plain call and a test per
required argument, not the packing of ``*args, **kwargs``: the required parameters
default to a marker, and one that is still the marker raises as Python would.
"""

from __future__ import annotations

import functools
import inspect


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


_MISSING = _Missing()
_made: dict = {}  # fn -> its wrapper (one per function, so its names share it)
# PyTorch's functions whose input is not their first argument (where(condition, input,
# other), searchsorted(sorted_sequence, input)): input= is theirs to refuse, not the first's
_NOT_FIRST = {"where", "searchsorted"}
_kinds = inspect.Parameter


def takes_input_keyword(fn):
    """``fn``, or a wrapper with ``fn``'s signature that also takes ``input=`` for its first
    parameter; ``fn`` itself when it is not a function (a class), when that parameter is
    ``input`` already or cannot be passed by name, or when ``fn`` takes ``**kwargs``
    (which may mean something else by it)."""
    made = _made.get(fn)
    if made is not None:
        return made
    if not inspect.isfunction(fn) or fn.__name__ in _NOT_FIRST:  # (a class stays itself)
        return fn
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (a builtin without a signature)
        return fn
    if (not params or params[0].kind is not _kinds.POSITIONAL_OR_KEYWORD or any(
            p.name == "input" or p.kind in (_kinds.VAR_KEYWORD, _kinds.POSITIONAL_ONLY)
            for p in params)):
        return fn
    _made[fn] = op = _wrapper(fn, params)
    return op


def _wrapper(fn, params: list):
    name, first = fn.__name__, params[0].name
    names = {"_fn": fn, "_missing": _MISSING}
    header, call, required, star = [], [], [], False
    for i, p in enumerate(params):
        if p.kind is _kinds.VAR_POSITIONAL:
            header.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star = True
            continue
        if p.kind is _kinds.KEYWORD_ONLY and not star:
            header.append("*")
            star = True
        if p.default is p.empty:
            required.append(p.name)
        else:
            names[f"_d{i}"] = p.default
        default = "_missing" if i == 0 or p.default is p.empty else f"_d{i}"
        header.append(f"{p.name}={default}")
        call.append(p.name if p.kind is _kinds.POSITIONAL_OR_KEYWORD else f"{p.name}={p.name}")
    header += ([] if star else ["*"]) + ["input=_missing"]
    absent = (f"raise TypeError(\"{name}() missing required argument: '{first}' (PyTorch's "
              f"'input')\")" if first in required else f"{first} = _d0")
    lines = [f"def op({', '.join(header)}):",
             f"    if {first} is _missing:",
             "        if input is not _missing:",
             f"            {first} = input",
             "        else:",
             f"            {absent}",
             "    elif input is not _missing:",
             f"        raise TypeError(\"{name}() got '{first}' and PyTorch's 'input' for it: "
             f"give one\")"]
    for other in required:
        if other != first:
            lines += [f"    if {other} is _missing:",
                      f"        raise TypeError(\"{name}() missing required argument: "
                      f"'{other}'\")"]
    # sizes as varargs with a keyword twin (reshape(*sizes, shape=None)): the usual call
    # leaves the keyword at its default, and then passes none, as it did before the
    # keyword (a keyword through a view op's **kwargs is a tenth of a reshape's time)
    named = [i for i, p in enumerate(params) if p.kind is _kinds.KEYWORD_ONLY
             and p.default is not p.empty]
    if star and named and any(p.kind is _kinds.VAR_POSITIONAL for p in params):
        plain = [c for i, c in enumerate(call) if i not in named]
        test = " and ".join(f"{params[i].name} is _d{i}" for i in named)
        lines += [f"    if {test}:", f"        return _fn({', '.join(plain)})"]
    lines.append(f"    return _fn({', '.join(call)})")
    # compiled as this file's code, so that the frames that name a user's line (shadow
    # mode, errors) skip the wrapper as fastnn's own
    exec(compile("\n".join(lines) + "\n", __file__, "exec"), names)  # noqa: S102
    return functools.wraps(fn)(names["op"])
