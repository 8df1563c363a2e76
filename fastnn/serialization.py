"""PyTorch's ``torch.serialization``: ``save`` and ``load``, and the list of classes and
functions that reading a ``torch.save`` file may call (``add_safe_globals``,
``safe_globals``).

fastnn reads a ``torch.save`` file as PyTorch's ``weights_only=True`` load does: a pickle
may name only what a table allows (tensors, dicts, lists, numbers, strings). A script
that trusts its files allows more by name, as with PyTorch: NumPy scalars
(``numpy._core.multiarray.scalar``, ``numpy.dtype`` and its class, such as
``numpy.dtypes.Float64DType``), ``argparse.Namespace``. fastnn's own checkpoints are no
pickle and need none of this.
"""

from __future__ import annotations

import contextlib

from fastnn.checkpoint import load, save
from fastnn.checkpoint_torch import USER_ALLOWED

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "safe_globals", "save"]


def _key(entry) -> tuple:
    """(module, name) of a class or function, or of ``(obj, "module.name")``."""
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], str):
        module, _, name = entry[1].rpartition(".")
        if not module:
            raise ValueError(f"add_safe_globals: {entry[1]!r} must be a full 'module.name'")
        return (module, name), entry[0]
    module, name = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(name, str)):
        raise TypeError(f"add_safe_globals: expected classes or functions (or (obj, "
                        f"'module.name') pairs), got {type(entry).__name__} {entry!r}")
    return (module, name), entry


def add_safe_globals(safe_globals: list) -> None:
    """Allow each class or function (or ``(obj, "module.name")`` pair) in reading
    ``torch.save`` files, for the rest of the process (PyTorch's)."""
    for entry in safe_globals:
        key, obj = _key(entry)
        USER_ALLOWED[key] = obj


def get_safe_globals() -> list:
    """What :func:`add_safe_globals` allowed so far."""
    return list(USER_ALLOWED.values())


def clear_safe_globals() -> None:
    """Forget what :func:`add_safe_globals` allowed."""
    USER_ALLOWED.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allow the given classes and functions inside the ``with`` block only."""
    saved = dict(USER_ALLOWED)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        USER_ALLOWED.clear()
        USER_ALLOWED.update(saved)
