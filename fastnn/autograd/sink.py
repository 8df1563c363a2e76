"""Where a backward pass puts the gradients of leaves: ``.grad`` sums, and on the general
path (hooks, retain_grad, ``inputs=``, ``create_graph``) the :class:`_Sink` that runs the
hooks on each tensor's whole gradient first (split from :mod:`fastnn.autograd.engine`)."""

from __future__ import annotations

from fastnn.autograd import hooks, tensor_ops


class _Shared:
    """The storage record of a gradient whose array may be shared: copy before writing."""

    version = 0
    copy_on_write = True
    views = None
    viewed = False


_SHARED = _Shared()


def _accumulate(leaf, g, make) -> None:
    if leaf._grad is None:
        grad = leaf._grad = make(g, leaf._dtype, leaf._device)
        # the array may be shared (several leaves, the caller's grad=): copied before the
        # first in-place write into it (p.grad.zero_(), p.grad += ...)
        grad._storage = _SHARED
    else:
        # out of place: a gradient array may be shared by several leaves
        leaf._grad._data = leaf._device.ops.add(leaf._grad._data, g)


class _Sink:
    """Where gradients go on the general path: tensor hooks, retain_grad, the leaves'
    sums (so that a leaf's hooks see its whole gradient, as in PyTorch), the targets."""

    def __init__(self, cls, targets, capture, create_graph, redirect=None, attach=None):
        self.cls, self.targets, self.capture = cls, targets, capture
        self.attach = attach  # engine.attach: how the recorded adapter records ops
        self.create_graph = create_graph
        self.leaves, self.captured, self._adapters = {}, {}, {}
        self.redirect = redirect  # leaf(tensor, grad) instead of .grad (run_backward's leaf=)

    def tensor_ops(self, ops):
        """The recorded adapter of the backend hook table ``ops`` (one per table)."""
        found = self._adapters.get(id(ops))
        if found is None:
            found = self._adapters[id(ops)] = tensor_ops.TensorOps(ops, self.cls, self.attach)
        return found

    def add(self, t, a, b):
        ops = t._device.ops
        return self.tensor_ops(ops).add(a, b) if self.create_graph else ops.add(a, b)

    def _tensor(self, t, g):
        return g if isinstance(g, self.cls) else self.cls._make(g, t._dtype, t._device)

    def _hooked(self, t, g):
        out = hooks.run(t, self._tensor(t, g))
        return out if self.create_graph else out._data

    def reached(self, t, g):
        """``g``, the whole gradient of the non-leaf ``t``, after its hooks."""
        found = getattr(t, "_hooks", None)  # one look: an unset slot costs a caught error
        if found is not None:
            g = self._hooked(t, g)
            if found.retain:
                self._store(t, g)
        if self.targets is not None and id(t) in self.targets:
            self._deliver(t, g)
        return g

    def leaf(self, t, g):
        if self.redirect is not None:
            self.redirect(t, g)
            return
        entry = self.leaves.get(id(t))
        if entry is None:
            self.leaves[id(t)] = [t, g]
        else:
            entry[1] = self.add(t, entry[1], g)

    def finish(self) -> dict:
        for t, g in self.leaves.values():
            if getattr(t, "_hooks", None) is not None:
                g = self._hooked(t, g)
            if self.targets is None or id(t) in self.targets:
                self._deliver(t, g)
                if not self.capture:
                    hooks.run_post(t)
        return self.captured

    def _deliver(self, t, g):
        if self.capture:
            self.captured[id(t)] = self._tensor(t, g)
        else:
            self._store(t, g)

    def _store(self, t, g):
        """Add ``g`` into ``t.grad``; under create_graph the sum is on the tape."""
        if not self.create_graph:
            _accumulate(t, g, self.cls._make)
        elif t._grad is None:
            g = self._tensor(t, g)
            alias = self.cls._make(g._data, t._dtype, t._device)  # .grad is never shared
            alias._node, alias._requires_grad = g._node, g._requires_grad
            t._grad = alias
        else:
            t._grad = self.add(t, t._grad, self._tensor(t, g))
