"""bfloat16 on the NumPy backend: stored as ml_dtypes' bfloat16, computed in float32.

NumPy has no bfloat16; the optional ``ml_dtypes`` package (``pip install
fastnn-backend-cpu[bfloat16]``) gives it one. The backend lists bfloat16 only where that
package is installed, and imports it only when a bfloat16 array is first made (it costs
~1 s to import).

The arithmetic is PyTorch's CPU kernels': the values are stored in bfloat16, every hook
computes in float32 and rounds its floating results to bfloat16 once (a matmul, a
convolution or a sum accumulates in float32, then rounds). One wrapper per hook does it,
put over the hooks when the backend is imported (:func:`wrap_hooks`), so no hook knows
about bfloat16: a bfloat16 operand is read as float32, the float32 hook runs, and its
floating results are rounded to bfloat16. Hooks that only move or make values
(:data:`STORAGE`) see the bfloat16 arrays themselves, so that views alias. A float32
wrapper call pays one dtype check per array argument (~0.1 us).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from fastnn.api import dtypes, hookspec

BF16 = None
"""ml_dtypes' bfloat16 dtype once a bfloat16 array was made here (before: None, so the
wrappers' check, ``a.dtype is BF16``, is false without importing ml_dtypes)."""

STORAGE = frozenset((
    "from_numpy", "to_numpy", "to_numpy_many", "to_numpy_views", "full", "uniform",
    "astype", "reshape", "transpose", "broadcast_to", "contiguous", "slice",
    "slice_scatter", "assign", "cat", "gather", "index_select", "one_hot", "allreduce",
    "broadcast", "compile_program", "backend_probe",
))
"""Hooks that move, copy or make values (no arithmetic): they run on the bfloat16 arrays
as they are (a view of a bfloat16 array is a bfloat16 view)."""

FLOAT32_RESULTS = {"total_norm": None, "layer_norm_train": (1, 2), "rms_div": (1,)}
"""Hook -> the results it keeps float32 for bfloat16 inputs (None: all): total_norm's, by
its spec; the statistics that only the backward reads, as PyTorch keeps them (rounded,
the mean of values far from 0 loses the small differences the backward subtracts)."""

ROUNDED_SCALARS = frozenset(("add", "sub", "pow"))
"""Hooks whose Python float operand PyTorch rounds to bfloat16 first (``x + 0.1`` adds
bfloat16's 0.1); ``mul`` and ``div`` take the number at float32 precision, as PyTorch's."""

def available() -> bool:
    """Whether bfloat16 can be offered here (ml_dtypes is installed)."""
    return dtypes.has_numpy_bfloat16()


def numpy_dtype(name: str):
    """The NumPy dtype for the dtype name ``name``: ml_dtypes' for ``"bfloat16"`` (imported
    now, and :data:`BF16` set), else ``name`` itself."""
    global BF16
    if name != "bfloat16":
        return name
    if BF16 is None:
        BF16 = dtypes.numpy_bfloat16()
        if BF16 is None:  # found by available(), but its import failed
            raise TypeError("bfloat16: the ml_dtypes package is installed but cannot be "
                            "imported (import ml_dtypes says why); reinstall it")
    return BF16


def noted(array):
    """``array``, after noting that a bfloat16 array now exists (from_numpy's input)."""
    if BF16 is None and array.dtype.name == "bfloat16":
        numpy_dtype("bfloat16")
    return array


def rounded(value, dtype: str):
    """A fill value for ``dtype``: for bfloat16, rounded to float32 first, as PyTorch
    converts a number (double to float to bfloat16: 862 of 600k doubles near a tie land
    on the other bfloat16 when rounded once)."""
    if dtype != "bfloat16" or not isinstance(value, float):
        return value
    return float(np.float32(value))


def astype(x, dtype: str, plain):
    """``x`` converted to ``dtype`` where one side is bfloat16: through float32, as
    PyTorch converts (``plain``, the backend's astype, takes float32 on to ``dtype``)."""
    bf16 = numpy_dtype("bfloat16")
    if x.dtype is bf16:
        return x.copy() if dtype == "bfloat16" else plain(widened(x), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        wide = x if x.dtype == np.float32 else x.astype(np.float32)
    return wide.astype(bf16)


def widened(array: np.ndarray) -> np.ndarray:
    """A bfloat16 array as float32, exactly: its 16 bits as a float32's upper half.

    NOTE: 3x faster than ml_dtypes' cast (18 against 55 us on 64k values), which every
    hook pays on each bfloat16 operand; the values are the same bit for bit (NaN too)."""
    wide = array.view(np.uint16).astype(np.uint32)
    wide <<= 16
    return wide.view(np.float32)


def _up(value):
    """A bfloat16 array (or a list or tuple of arrays) as float32; anything else as is."""
    if type(value) is np.ndarray:
        return widened(value) if value.dtype is BF16 else value
    if type(value) in (list, tuple):
        return type(value)(_up(v) for v in value)
    return value


def _down(value):
    """float32 arrays (in lists and tuples too) rounded to bfloat16; anything else as is."""
    if type(value) is np.ndarray:
        return value.astype(BF16) if value.dtype == np.float32 else value
    if type(value) is np.float32:  # a reduction's NumPy scalar: a 0-d array
        return np.asarray(value).astype(BF16)
    if type(value) in (list, tuple):
        return type(value)(_down(v) for v in value)
    return value


def _down_parallel(value, mask: list):
    """As :func:`_down`, but a list as long as ``mask`` (a hook's result parallel to its
    input list: the optimizer steps, clip_grads_with_norm) rounds only where ``mask`` says
    its input was bfloat16: a float32 gradient beside a bfloat16 one stays float32."""
    if type(value) is list and len(value) == len(mask):
        return [_down(v) if bf16 else v for v, bf16 in zip(value, mask)]
    if type(value) in (list, tuple):
        return type(value)(_down_parallel(v, mask) for v in value)
    return _down(value)


def _bf16_number(value):
    """A Python float rounded to bfloat16 (through float32, as PyTorch); else ``value``."""
    if type(value) is not float:
        return value
    return float(np.float32(value).astype(BF16))


def _has_bf16(value) -> bool:
    if type(value) is np.ndarray:
        return value.dtype is BF16
    if type(value) in (list, tuple):
        return any(_has_bf16(v) for v in value)
    return False


def _array_positions(name: str) -> tuple[tuple[int, ...], int | None]:
    """The positions of ``name``'s array (or list-of-arrays) parameters in its spec, and
    that of its first list of arrays (None without one)."""
    kinds = [str(p.annotation) for p in
             inspect.signature(getattr(hookspec, name)).parameters.values()]
    lists = [i for i, kind in enumerate(kinds) if kind == "list"]
    return (tuple(i for i, kind in enumerate(kinds) if "Array" in kind or kind == "list"),
            lists[0] if lists else None)


def _checking(name: str, fn, slow, positions):
    """``fn`` behind a check of its array arguments: ``slow(args)`` where one is bfloat16.

    Written out per hook (its own parameters, the checks inline), as dataclasses writes
    its methods: a generic ``*args`` wrapper cost ~1.2 us a call, ~10% of a small MLP's
    float32 step; this one ~0.2 us. Until a bfloat16 array exists (:data:`BF16` None) it
    checks nothing: a list of arrays (an optimizer's) is not walked."""
    params = list(inspect.signature(getattr(hookspec, name)).parameters)
    arrays = [params[i] for i in positions]
    test = " or ".join(f"(type({p}) is np.ndarray and {p}.dtype is BF16) or "
                       f"(type({p}) is list and _has_bf16({p}))" for p in arrays) or "False"
    args = ", ".join(params)
    source = (f"def make(fn, slow):\n"
              f"    def {name}({args}):\n"
              f"        if BF16 is not None and ({test}):\n"
              f"            return slow(({args},))\n"
              f"        return fn({args})\n"
              f"    return {name}\n")
    made: dict = {}
    exec(source, globals(), made)  # this module's globals, live: BF16 is set later
    return made["make"](fn, slow)


def _wrapped(name: str, fn):
    """``fn`` (the hook ``name``) computing bfloat16 operands in float32."""
    positions, first_list = _array_positions(name)
    keep = FLOAT32_RESULTS.get(name, ())

    def slow(args):
        if name in ROUNDED_SCALARS:
            args = [_bf16_number(a) for a in args]
        out = fn(*(_up(a) for a in args))
        if keep is None:
            return out
        if keep:
            return tuple(v if i in keep else _down(v) for i, v in enumerate(out))
        if first_list is None:
            return _down(out)
        return _down_parallel(out, [_has_bf16(a) for a in args[first_list]])

    hook = functools.wraps(fn)(_checking(name, fn, slow, positions))
    hook.bfloat16_wrapper = True
    return hook


def wrap_hooks(modules) -> None:
    """Put the bfloat16 wrapper over every hook implementation of ``modules`` (the
    backend's hook modules) but :data:`STORAGE`'s, in place."""
    marker = f"{hookspec.PROJECT}_impl"
    for module in modules:
        for name, fn in list(vars(module).items()):
            if not callable(fn) or not hasattr(fn, marker) or name in STORAGE or \
                    getattr(fn, "bfloat16_wrapper", False) or \
                    not hasattr(hookspec, name):
                continue
            setattr(module, name, _wrapped(name, fn))
