"""The error (and warning) a shadowed hook call raises when it leaves the tolerance."""

from __future__ import annotations

import numpy as np


class ShadowMismatch(RuntimeError):
    """A backend hook whose output disagrees with the reference backend's on the same inputs.

    Attributes: ``op`` (hook name), ``backend`` and ``reference`` (device names),
    ``input_shapes``, ``input_dtypes``, ``output`` (which output, e.g. ``"[0][2]"``),
    ``shape``, ``dtype``, ``max_abs``, ``max_rel``, ``worst`` (index), ``got`` and
    ``expected`` (the worst element's two values), ``rtol``, ``atol``, ``bad`` (elements out
    of tolerance), ``source`` ((file, line, function, text) of the user's code or None),
    ``backward_of`` (the op whose gradient was being computed, or None), ``call`` (the
    call's index since shadowing began), ``step`` and ``op_in_step`` (optimizer steps
    seen before it, and its index in the current step), ``producers`` (per array
    argument: (call, hook) that made it, or None).
    """

    def __init__(self, **info):
        self.__dict__.update(info)
        super().__init__(message(info))


class ShadowWarning(UserWarning):
    """A shadow mismatch reported with ``fnn.shadow(..., mode="warn")``."""


def _shape(value) -> str:
    return str(tuple(value)) if isinstance(value, tuple) else str(value)


def _inputs(info) -> list:
    lines = []
    for i, (shape, dtype, made) in enumerate(zip(info["input_shapes"], info["input_dtypes"],
                                                 info["producers"])):
        if made is None:
            origin = "made before shadowing began (or outside it)"
        else:
            origin = f"from call {made[0]} ({made[1]})"
        lines.append(f"    {info['arg_names'][i]}: {dtype} {_shape(shape)}, {origin}")
    return lines


def message(info) -> str:
    """The text of a mismatch: what, how far off, where in the program."""
    where = f"call {info['call']} (op {info['op_in_step']} of step {info['step']})"
    head = (f"shadow: {info['op']} on {info['backend']} disagrees with {info['reference']} "
            f"on the same inputs, at {where}")
    out = f"output{info['output']}" if info["output"] else "output"
    kind = info["kind"]
    if kind in ("shape", "dtype"):
        detail = f"  {out}: {kind} {info['got']} where {info['reference']} gives {info['expected']}"
        lines = [head, detail]
    else:
        worst = "(" + ", ".join(str(i) for i in info["worst"]) + ")"
        lines = [head,
                 f"  {out}: {info['dtype']} {_shape(info['shape'])}; {info['bad']} of "
                 f"{info['size']} elements out of tolerance (rtol={info['rtol']:g}, "
                 f"atol={info['atol']:g})",
                 f"  worst {kind} at {worst}: got {_num(info['got'])}, {info['reference']} "
                 f"gives {_num(info['expected'])}; max abs err {info['max_abs']:.3g}, "
                 f"max rel err {info['max_rel']:.3g}"]
    lines.append("  inputs:")
    lines += _inputs(info) or ["    (none)"]
    if info["backward_of"]:
        lines.append(f"  in the backward of {info['backward_of']!r}")
    source = info["source"]
    if source:
        path, line, function, text = source
        lines.append(f"  issued by {path}:{line} in {function}: {text}")
    else:
        lines.append("  issued from inside fastnn (no frame outside it on the stack)")
    return "\n".join(lines)


def _num(value) -> str:
    if isinstance(value, float) and np.isfinite(value):
        return f"{value:.9g}"
    return repr(value)
