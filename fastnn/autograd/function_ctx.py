"""What a custom Function's ``forward`` and ``backward`` share (:class:`FunctionCtx`), and
how an output saved for backward is held (:class:`_SavedOutput`); the Function and its
tape nodes are in :mod:`fastnn.autograd.function`."""

from __future__ import annotations

import functools
import weakref


def _is_tensor(x) -> bool:
    return hasattr(x, "_node") and hasattr(x, "_data")


class FunctionCtx:
    """What ``forward`` (or ``setup_context``) and ``backward`` share: saved tensors, flags,
    and any attribute you set on it (``ctx.scale = 2.0``)."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = set()
        self._dirty = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for ``backward``, as ``ctx.saved_tensors``."""
        self._saved = _checked("save_for_backward", tensors)

    def save_for_forward(self, *tensors) -> None:
        """Keep ``tensors`` (Tensors or None) for a ``jvp`` staticmethod, as PyTorch's. fastnn's
        forward mode (``fnn.func.jvp``, ``jacfwd``) differentiates ``backward`` instead
        (the double-vjp trick), so ``jvp`` is not called and these are only kept."""
        self._saved_forward = _checked("save_for_forward", tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to :meth:`save_for_backward`, in order."""
        record = getattr(self, "_record", None)
        found = []
        for t in self._saved:
            if isinstance(t, _SavedOutput):
                t = t.get()
            found.append(t)
        if record is not None:
            record.check_versions(found)
        return tuple(found)

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient: they do not require grad, and ``backward``
        gets zeros (or None, see :meth:`set_materialize_grads`) for them."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for the gradient of an
        output that no gradient reached."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that ``forward`` wrote in place: each must be returned as an
        output, and it takes the call's history (as an in-place op's result does)."""
        self._dirty = tuple(tensors)


class _SavedOutput:
    """An output saved for backward, held weakly (output -> node -> ctx -> output would be a
    reference cycle). Once the output is gone its data comes back on a node of the call again
    while the call's graph lives, as PyTorch's saved outputs keep their grad_fn: a backward
    recorded under create_graph reaches the call through it (the double-backward tutorial's
    Sinh returns exp(x) as an output only to save it)."""

    __slots__ = ("ref", "make", "owner")

    def __init__(self, out):
        self.ref = weakref.ref(out)
        self.make = functools.partial(type(out)._make, out._data, out._dtype, out._device)
        self.owner = None  # () -> the output's node, or None once the graph is gone

    def get(self):
        out = self.ref()
        if out is not None:
            return out
        out = self.make()
        node = self.owner() if self.owner is not None else None
        if node is not None:
            _own(out, node)
        return out


def _checked(method: str, tensors: tuple) -> tuple:
    for i, t in enumerate(tensors):
        if t is not None and not _is_tensor(t):
            raise TypeError(f"{method}: argument {i} must be a Tensor or None, got "
                            f"{type(t).__name__}; keep other values as ctx attributes")
    return tensors


def _own(out, node) -> None:
    out._node, out._requires_grad = node, True
