"""A hook call's arguments and outputs, as the spec declares them: which are backend
arrays, lists of them, host arrays or device indices, and how each goes to the host and
to the reference backend."""

from __future__ import annotations

import inspect

import numpy as np

from fastnn.api import hookspec


def signature(hook: str):
    """(parameter names, their kinds, whether the hook returns None) from the spec."""
    sig = inspect.signature(getattr(hookspec, hook))
    kinds = []
    for name, param in sig.parameters.items():
        if name == "device_index":
            kinds.append("device")
        elif hook == "from_numpy" and name == "array":
            kinds.append("host")
        elif param.annotation == "Array":
            kinds.append("array")
        elif param.annotation == "list":
            kinds.append("list")
        else:
            kinds.append("value")
    return tuple(sig.parameters), tuple(kinds), sig.return_annotation == "None"


SIGNATURES = {hook: signature(hook) for hook in hookspec.HOOKS}


def dtype_name(value) -> str:
    while isinstance(value, (list, tuple)):
        value = next((v for v in value if v is not None), None)
    try:
        return np.dtype(value.dtype).name
    except (AttributeError, TypeError):
        return "-"


def describe(session, backend, hook, args, host, path, diff, row, place) -> dict:
    names, kinds, _ = SIGNATURES[hook]
    entries = []  # (name, host copy, the backend's array) per array argument
    for name, kind, arg, copy in zip(names, kinds, args, host):
        if kind == "array" and isinstance(copy, np.ndarray):
            entries.append((name, copy, arg))
        elif kind == "list":
            entries += [(f"{name}[{i}]", c, a) for i, (c, a) in enumerate(zip(copy, arg))
                        if isinstance(c, np.ndarray)]
        elif kind == "host":
            entries.append((name, copy, None))
    return dict(
        op=hook, backend=device_name(backend, names, args), reference=str(session._ref),
        output=path, arg_names=[e[0] for e in entries],
        input_shapes=[e[1].shape for e in entries],
        input_dtypes=[e[1].dtype.name for e in entries],
        producers=[None if e[2] is None else session._producers.of(e[2]) for e in entries],
        shape=diff.shape, size=diff.size, dtype=row.dtype, kind=diff.kind, bad=diff.bad,
        max_abs=diff.max_abs, max_rel=diff.max_rel, worst=diff.worst, got=diff.got,
        expected=diff.want, rtol=row.rtol, atol=row.atol, source=place[3],
        backward_of=place[4], call=place[0], step=place[1], op_in_step=place[2],
    )


def device_name(backend, names, args) -> str:
    if "device_index" in names:
        return f"{backend.name}:{args[names.index('device_index')]}"
    return backend.name


def bind(hook, args, kwargs) -> tuple:
    names = SIGNATURES[hook][0]
    bound = inspect.signature(getattr(hookspec, hook)).bind(*args, **kwargs)
    return tuple(bound.arguments[name] for name in names)


def host_copy(kind, value, fetch):
    """A host copy of an argument (arrays), or the argument itself (other values)."""
    if kind == "array":
        if value is None or not hasattr(value, "shape"):
            return value
        return fetch(value)
    if kind == "list":
        return [host_copy("array", v, fetch) for v in value]
    if kind == "host":
        return np.array(value, copy=True)
    return value


def to_ref(kind, value, ref_ops, ref_index, direct=False):
    """An argument for the reference: host arrays uploaded (``direct``: passed as they
    are, to a reference whose arrays are NumPy's and whose hook does not write them)."""
    if kind == "device":
        return ref_index
    if kind == "array" and isinstance(value, np.ndarray):
        return value if direct else ref_ops.from_numpy(value, ref_index)
    if kind == "list":
        return [to_ref("array", v, ref_ops, ref_index, direct) for v in value]
    return value


def flatten(value, to_numpy, hook, path="") -> list:
    """[(path, host array or None)] for every array in an output (lists and tuples too)."""
    if isinstance(value, (list, tuple)):
        out = []
        for i, item in enumerate(value):
            out += flatten(item, to_numpy, hook, f"{path}[{i}]")
        return out
    if value is None:
        return [(path, None)]
    if hook == "to_numpy":
        return [(path, np.asarray(value))]
    return [(path, np.asarray(to_numpy(value)))]
