"""A hook call's arguments and outputs, as the spec declares them: which are backend
arrays, lists of them, host arrays or device indices, and how each goes to the host and
to the reference backend.

Everything a call needs is worked out once per hook (:class:`Spec`), so that a shadowed
call only walks its own arguments.
"""

from __future__ import annotations

import inspect

import numpy as np

from fastnn.api import hookspec

# hooks whose outputs are host arrays already, and which wait for the device anyway
HOST_OUT = frozenset({"to_numpy", "to_numpy_many", "to_numpy_views"})


class Spec:
    """One hook's parameters as shadow mode sees them."""

    __slots__ = ("hook", "names", "kinds", "returns_none", "in_place", "sync", "arrays",
                 "simple", "devices", "closes_step", "array_positions", "plain")

    def __init__(self, hook: str):
        sig = inspect.signature(getattr(hookspec, hook))
        kinds = []
        for name, param in sig.parameters.items():
            if name == "device_index":
                kinds.append("device")
            elif hook == "from_numpy" and name == "array":
                kinds.append("host")
            elif param.annotation in ("Array", "Array | None"):  # (None passes as it is)
                kinds.append("array")
            elif param.annotation == "list":
                kinds.append("list")
            else:
                kinds.append("value")
        self.hook, self.names, self.kinds = hook, tuple(sig.parameters), tuple(kinds)
        self.returns_none = sig.return_annotation == "None"
        # a hook that writes its arguments: the inputs are copied first, nothing waits
        self.in_place = self.returns_none or hook.endswith("_step")
        self.closes_step = hook.endswith("_step")  # a fused optimizer update ends a step
        self.sync = hook in HOST_OUT  # waits for the device anyway: checked at once
        # (position, kind) of the arguments that hold backend arrays
        self.arrays = tuple((i, k) for i, k in enumerate(kinds) if k in ("array", "list"))
        # only single arrays and plain values: the common case, walked without branches
        self.simple = all(k in ("array", "value") for k in kinds)
        self.devices = "device" in kinds  # takes a device index (the reference's differs)
        self.array_positions = tuple(i for i, k in enumerate(kinds) if k == "array")
        # one array out, only arrays and values in: a batch's check takes a short path
        self.plain = (self.simple and not self.returns_none and not self.devices
                      and not self.sync and hook != "from_numpy"
                      and sig.return_annotation == "Array")


SPECS = {hook: Spec(hook) for hook in hookspec.HOOKS}


def arrays_in(value) -> list:
    """The backend arrays in an argument or output (lists and tuples flattened)."""
    if isinstance(value, (list, tuple)):
        found = []
        for item in value:  # (leaves tested here: no call for each array of a list)
            if isinstance(item, (list, tuple)):
                found += arrays_in(item)
            elif item is not None and hasattr(item, "shape"):
                found.append(item)
        return found
    return [value] if value is not None and hasattr(value, "shape") else []


def input_arrays(spec: Spec, args) -> list:
    """The backend arrays among a call's arguments, in order."""
    found = []
    for i, kind in spec.arrays:
        value = args[i]
        if kind == "array":
            if value is not None and hasattr(value, "shape"):
                found.append(value)
        else:
            found += arrays_in(value)
    return found


def host_args(spec: Spec, args, lookup) -> list:
    """The call's arguments with each backend array replaced by ``lookup(array)`` (its
    host copy) and host arrays copied (``from_numpy``'s, which the caller may change)."""
    host = list(args)
    for i, kind in spec.arrays:
        value = args[i]
        if kind == "array":
            if value is not None and hasattr(value, "shape"):
                host[i] = lookup(value)
        else:
            host[i] = [lookup(v) if v is not None and hasattr(v, "shape") else v
                       for v in value]
    if spec.hook == "from_numpy":
        host[0] = np.array(args[0], copy=True)
    return host


def to_ref(spec: Spec, host, ref_ops, ref_index, direct: bool) -> list:
    """The reference's arguments: host arrays uploaded (``direct``: passed as they are, to
    a reference whose arrays are NumPy's), the device index the reference's own."""
    if direct and not spec.devices:  # NumPy's arrays as they are, nothing to replace
        return host
    ref = list(host)
    for i, kind in enumerate(spec.kinds):
        if kind == "device":
            ref[i] = ref_index
        elif not direct:
            if kind == "array" and isinstance(host[i], np.ndarray):
                ref[i] = ref_ops.from_numpy(host[i], ref_index)
            elif kind == "list":
                ref[i] = [ref_ops.from_numpy(v, ref_index) if isinstance(v, np.ndarray) else v
                          for v in host[i]]
    return ref


def outputs(value, path="") -> list:
    """[(path, backend array or None)] for every array in an output (lists and tuples too)."""
    if isinstance(value, (list, tuple)):
        out = []
        for i, item in enumerate(value):
            out += outputs(item, f"{path}[{i}]")
        return out
    return [(path, value)]


_NAMES: dict = {}  # an array's dtype attribute (a NumPy dtype, a backend's name) -> name


def dtype_name(value) -> str:
    while isinstance(value, (list, tuple)):
        value = next((v for v in value if v is not None), None)
    kind = getattr(value, "dtype", None)
    if kind is None:
        return "-"
    try:
        return _NAMES[kind]
    except (KeyError, TypeError):  # not seen yet, or unhashable
        pass
    try:
        name = np.dtype(kind).name
    except (AttributeError, TypeError):
        return "-"
    try:
        if len(_NAMES) < 256:
            _NAMES[kind] = name
    except TypeError:
        pass
    return name


def describe(session, backend, spec, args, host, path, diff, row, place) -> dict:
    entries = []  # (name, host copy, the backend's array) per array argument
    for name, kind, arg, copy in zip(spec.names, spec.kinds, args, host):
        if kind == "array" and isinstance(copy, np.ndarray):
            entries.append((name, copy, arg))
        elif kind == "list":
            entries += [(f"{name}[{i}]", c, a) for i, (c, a) in enumerate(zip(copy, arg))
                        if isinstance(c, np.ndarray)]
        elif kind == "host":
            entries.append((name, copy, None))
    return dict(
        op=spec.hook, backend=device_name(backend, spec.names, args),
        reference=str(session._ref), output=path, arg_names=[e[0] for e in entries],
        input_shapes=[e[1].shape for e in entries],
        input_dtypes=[e[1].dtype.name for e in entries],
        producers=[None if e[2] is None else (place.producers or session._producers).of(e[2])
                   for e in entries],
        shape=diff.shape, size=diff.size, dtype=row.dtype, kind=diff.kind, bad=diff.bad,
        max_abs=diff.max_abs, max_rel=diff.max_rel, worst=diff.worst, got=diff.got,
        expected=diff.want, rtol=row.rtol, atol=row.atol, source=place.source(),
        backward_of=place.backward_of(), call=place.call, step=place.step,
        op_in_step=place.op_in_step,
    )


def device_name(backend, names, args) -> str:
    if "device_index" in names:
        return f"{backend.name}:{args[names.index('device_index')]}"
    return backend.name


def bind(hook, args, kwargs) -> tuple:
    names = SPECS[hook].names
    bound = inspect.signature(getattr(hookspec, hook)).bind(*args, **kwargs)
    return tuple(bound.arguments[name] for name in names)
