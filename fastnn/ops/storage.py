"""Storage, views and in-place writes: PyTorch's aliasing model on every backend.

A tensor made by a view op (basic indexing, ``view``/``reshape`` when the layout allows,
``transpose``/``permute``, ``expand``, ``detach`` ...) records a view record: the
tensor that owns the storage (its *base*, never itself a view) and how the view was made.
From that :mod:`fastnn.ops.view_layout` derives, lazily, the view's layout in the base's
storage (shape, strides, offset, counted in elements of the base in C order): ``stride()``,
``is_contiguous()``, ``storage_offset()``, and the flat positions a write must reach.

Writes go through :func:`write`, the one in-place write of the core. A backend whose view
hooks return aliasing views and that implements the ``assign`` hook (cpu, cuda, opencl)
writes into the view's memory and everything sharing it sees the values. A backend that
knows only contiguous arrays (no ``assign``) stays correct through the composite: the
write is scattered into the base's array, and every live view of that base is refreshed
from it (a copy per write, paid only by such backends).

Each base has a :class:`Storage` record, made at its first write: the write clock's stamp
of that write (the autograd engine compares it with the stamp of each node that saved the
tensor, as PyTorch's version counter) and, on composite backends, its live views.
"""

from __future__ import annotations

import math
import weakref

from fastnn.api import dtypes
from fastnn.autograd import engine, grad_mode, hooks, node_names
from fastnn.autograd.engine import Node
from fastnn.autograd.saved import OUTPUT_COPIED_ON_WRITE
from fastnn.ops.core import astype
from fastnn.ops.view_layout import (
    BASE,
    DETACHED,
    KIND,
    NO_GRAD,
    PARENT,
    base_of,
    device_positions,
    layout,
    overlaps,
    written_mask,
)

DATA = "data"  # the DETACHED entry of x.data and of its views (see data_of)


class Storage:
    """A base's write record: the stamp of its last in-place write; its live views."""

    __slots__ = ("version", "copy_on_write", "views", "viewed", "grad_views", "prune_at")

    def __init__(self):
        self.version = 0
        self.copy_on_write = False
        self.views = None  # a WeakSet of the views to refresh (composite backends only)
        self.viewed = False  # some view was made of this base (its array is C-contiguous)
        # weak references to the views made with history: a write through the base or
        # another view gives each live one a fresh history (PyTorch regenerates a view's
        # grad_fn); the dead are dropped once the list passes prune_at
        self.grad_views = None
        self.prune_at = 64


def native(device) -> bool:
    """Whether ``device``'s backend writes through views itself (implements ``assign``)."""
    ops = device.ops
    found = ops.__dict__.get("_writes_views")
    if found is None:
        found = ops._writes_views = "assign" in device.backend.implemented
    return found


def source(x):
    """x's array, ready to be viewed: the base's storage record is made and marked viewed,
    and a gradient whose array may be shared gets its own copy first.

    A hook may return its result non-contiguous (the cpu conv's output, and what
    elementwise ops make of it), while the core lays every base out in C order: such a
    base is made C-contiguous before its first view, so that the backend's reshape of any
    later view is a view wherever PyTorch's is (one copy, of viewed tensors only).
    """
    if x._view is None:
        storage = x._storage
        if storage is None or storage.copy_on_write:
            ops = x._device.ops
            x._data = copy_array(x) if storage is not None else ops.contiguous(x._data)
            storage = x._storage = Storage()
        elif not storage.viewed:
            x._data = x._device.ops.contiguous(x._data)
        storage.viewed = True
    return x._data


def copy_array(t):
    """A new C-contiguous array holding t's values (never t's own array)."""
    ops = t._device.ops
    if t._dtype is dtypes.bool_:
        return ops.astype(t._data, "bool")
    return ops.contiguous(ops.add(t._data, 0))


def mark_view(out, x, kind: str, args=None):
    """Record ``out`` (made from ``x`` by the view op ``kind``) as a view of x's storage."""
    info = x._view
    if info is None:
        out._view = [x, x, kind, args, kind == "alias", None, None, False]
    else:
        out._view = [info[BASE], x, kind, args, info[DETACHED] or kind == "alias", None, None,
                     info[NO_GRAD]]
    if x._requires_grad and not out._view[DETACHED]:
        if grad_mode.switches.grad:
            _track(out)
        else:  # a view made under no_grad keeps no history, as PyTorch's
            out._view[NO_GRAD] = True
    writes = x._device.ops.__dict__.get("_writes_views")  # native(), inlined: every view
    if not (writes or native(x._device)):
        base = out._view[BASE]
        storage = _storage(base)
        if storage.views is None:
            storage.views = weakref.WeakSet()
        storage.views.add(out)
    return out


def _track(view) -> None:
    """Note ``view`` on its base's storage, for :func:`_renew_views`."""
    base = view._view[BASE]
    storage = base._storage
    if storage is None:  # (not _storage(): a copy-on-write record must stay as it is)
        storage = base._storage = Storage()
    views = storage.grad_views
    if views is None:
        views = storage.grad_views = []
    views.append(weakref.ref(view))
    if len(views) > storage.prune_at:  # (amortised: a parameter viewed at every step)
        views[:] = [ref for ref in views if ref() is not None]
        storage.prune_at = 2 * len(views) + 64


def plain_class(x) -> type:
    """The Tensor class itself for ``x`` of any subclass: what a view of a Parameter is
    (PyTorch's ``p.detach()``, ``p.data`` and ``p[...]`` are plain Tensors, so that
    ``module.w = p.detach()`` does not register a second parameter)."""
    return type(x).__mro__[-2]  # Tensor derives from object alone


def data_of(x):
    """``x.data``: an alias of x's storage (:func:`alias`) whose writes, and those through
    its views, autograd does not see (no version tick: PyTorch gives ``.data`` a version
    counter of its own)."""
    out = alias(x)
    out._view[DETACHED] = DATA
    return out


def alias(x, out=None):
    """A view of all of x's storage without its history (``detach()``, ``.data``); with
    ``out``, that tensor becomes it (``y.data = x``)."""
    if out is not None and _made_from(x, out):  # (``p.data = p.data``, or ``= p.data.to(
        if x._dtype is out._dtype and layout(x) == layout(out):  # its dtype)``: the same)
            return out
        raise ValueError(  # (as its own view, out would be its own parent)
            "x.data = value: value is another view of x's own storage (x[...], x.t(), "
            "x.data.view(...)), which fastnn cannot make x's storage; give x a copy of "
            "those values with x.data = value.clone()")
    data = source(x)
    if out is None:
        out = plain_class(x)._make(data, x._dtype, x._device)
    else:
        out._data, out._dtype, out._view = data, x._dtype, None
    return mark_view(out, x, "alias")


def _made_from(view, t) -> bool:
    """Whether ``view`` is ``t`` or was made from it, through any chain of views."""
    while view is not t:
        if view._view is None:
            return False
        view = view._view[PARENT]
    return True


def whole(x):
    """A view of all of ``x`` (``x[...]``), so that a write through it is a write through
    a view (recorded as PyTorch's CopySlices, the old values' gradient zero)."""
    return mark_view(plain_class(x)._make(source(x), x._dtype, x._device), x, "whole")


def _storage(base):
    storage = base._storage
    if storage is None or storage.copy_on_write:
        storage = base._storage = Storage()
    return storage


# ---------------------------------------------------------------- writes


def check_inplace(op: str, t) -> None:
    """RuntimeError for an in-place write that would corrupt autograd or alias itself."""
    if grad_mode.switches.grad:
        base = t if t._view is None or t._view[DETACHED] else t._view[BASE]
        for leaf, what in ((t, "a leaf tensor"), (base, "a view of a leaf tensor")):
            if leaf._requires_grad and leaf._node is None:
                raise RuntimeError(
                    f"{op}: {what} that requires grad is used in an in-place operation; "
                    "write under `with fnn.no_grad():` (as an optimizer or an initialiser "
                    "does), or on a copy (x.clone())")
        if t._view is not None and t._view[NO_GRAD] and base._requires_grad:
            raise RuntimeError(
                f"{op}: a view was created in no_grad mode and is being modified in place "
                "with grad mode enabled, which PyTorch forbids as ambiguous; make both the "
                "view and the write inside the no_grad block (not tracked) or both outside "
                "(tracked)")
    if t._view is not None and overlaps(t):
        raise RuntimeError(
            f"{op}: more than one element of the written-to tensor refers to a single memory "
            f"location (an expand()ed view of shape {t.shape}); call .clone() before writing")


def write(t, new) -> None:
    """Make ``t`` hold ``new``'s values in place (``new``: t's shape, dtype and device).

    Every tensor sharing t's storage sees the values; with grad mode on, a ``new`` that
    carries history becomes t's history (and its base's, for a view), as PyTorch records
    an in-place op.
    """
    base = base_of(t)
    storage = base._storage
    if storage is not None and storage.copy_on_write:  # a gradient array shared elsewhere
        base._data = copy_array(base)
        storage = None
    if storage is None:
        storage = _storage(base)
    # a write through x.data (or a view of it) is not seen by autograd, as PyTorch's: its
    # .data has a version counter of its own, so a backward reads the new values unchecked.
    # NOTE: not on a backend without views (no assign): there the write makes new arrays,
    # the nodes would read the old ones, so the version check raises instead
    tracked = t._view is None or t._view[DETACHED] != DATA or not native(t._device)
    node = base._node
    if tracked and node is not None and node.saved and any(
            s is base._data for s in node.saved):
        if node.op in OUTPUT_COPIED_ON_WRITE:  # PyTorch's rule would not read it: keep
            old = copy_array(base)            # the old values for this one
            node.saved = tuple(old if s is base._data else s for s in node.saved)
            node.out_id = id(old)
        else:
            node.stale = base.shape  # its rule reads the array being overwritten
    ops = t._device.ops
    if native(t._device):
        if new._data is not t._data:
            try:
                ops.assign(t._data, new._data)
            except TypeError:
                if t is not base or storage.viewed:
                    raise
                # an array the backend cannot write into (a NumPy reduction's 0-d result is
                # a read-only scalar) that nothing views: the base takes a copy instead
                base._data = copy_array(new)
    elif t is base:
        base._data = ops.contiguous(new._data)
        _refresh(base, storage)
    else:
        _write_back(t, base, new, storage)
    if tracked:
        storage.version = engine.tick()
    if grad_mode.switches.grad:
        if t._view is not None and t._view[DETACHED]:
            if new._requires_grad:  # a detached alias takes the history alone
                t._node, t._requires_grad = new._node, True
        elif new._requires_grad or base._requires_grad:
            _record(t, base, new)


def rebind(t, data) -> None:
    """``t`` takes the values of ``data`` (a new array of t's shape and dtype) without
    history: an optimizer's step, a buffer's update, a loaded state. A tensor nobody views
    just takes the array; otherwise the values are written where its views see them."""
    storage = t._storage
    if t._view is None and (storage is None or not storage.viewed):
        t._data = data
        if storage is None or storage.copy_on_write:
            storage = t._storage = Storage()
    else:
        base = base_of(t)
        storage = _storage(base)
        if native(t._device):
            if data is not t._data:  # an update made in place (a fused step) is there
                t._device.ops.assign(t._data, data)
        elif t is base:
            base._data = data
            _refresh(base, storage)
        else:
            _write_back(t, base, type(t)._make(data, t._dtype, t._device), storage)
    storage.version = engine.tick()


def _write_back(t, base, new, storage) -> None:
    """The composite: scatter ``new`` into the base's array, then refresh base's views."""
    ops, index = t._device.ops, t._device.index
    flat_n = math.prod(base.shape)
    positions = device_positions(t)
    work = "int64" if base._dtype is dtypes.bool_ else base._dtype.name
    values = ops.reshape(ops.astype(new._data, work), (-1,))
    scattered = ops.scatter_add(ops.full((flat_n,), 0, work, index), 0, positions, values)
    flat = ops.reshape(ops.astype(base._data, work), (flat_n,))
    data = ops.where(ops.from_numpy(written_mask(t, flat_n), index), scattered, flat)
    if work != base._dtype.name:
        data = ops.astype(data, base._dtype.name)
    base._data = ops.reshape(data, base.shape)
    _refresh(base, storage)


def _refresh(base, storage) -> None:
    """Re-read every live view of ``base`` from its (new) array (composite backends)."""
    if not storage.views:
        return
    ops = base._device.ops
    flat = ops.reshape(ops.contiguous(base._data), (math.prod(base.shape),))
    for view in list(storage.views):
        if view._view[KIND] == "alias":
            view._data = base._data if view._data.shape == base._data.shape else \
                ops.reshape(base._data, view._data.shape)
            continue
        picked = ops.index_select(flat, 0, device_positions(view))
        view._data = ops.reshape(picked, tuple(view._data.shape))


def _record(t, base, new) -> None:
    """Give ``t`` (and its base, when t is a view) the history of the write, as PyTorch's
    in-place ops and CopySlices do."""
    if t is base:
        t._node, t._requires_grad = new._node, True
        _renew_views(base, None)
        return
    old = type(base)._make(base._data, base._dtype, base._device)
    old._node, old._requires_grad = base._node, base._requires_grad
    hooks.hand_over(base, old)
    positions = device_positions(t)
    keep = ~written_mask(t, math.prod(base.shape))  # the positions the write left alone
    keep = base._device.ops.from_numpy(keep, base._device.index)
    spec = (base._dtype.name, base._device.index)
    base._node = Node("assign", (old, new), (), (positions, keep, base.shape, spec),
                      base._device.ops)
    base._requires_grad = True
    t._node = Node("as_strided", (base,), (), (positions, base.shape, spec), base._device.ops)
    t._requires_grad = True
    _renew_views(base, t)


def _renew_views(base, written) -> None:
    """Give every other live view of ``base`` made with history the base's new history
    (an as_strided of it), as PyTorch regenerates the grad_fn of a view whose base was
    written: else ``v = y[0]; y.mul_(2); v.sum().backward()`` would miss the write."""
    storage = base._storage
    views = storage.grad_views if storage is not None else None
    if not views:
        return
    spec = (base._dtype.name, base._device.index)
    live = []
    for ref in views:
        view = ref()
        if view is None or view._view is None or view._view[BASE] is not base:
            continue  # (dead, or no longer a view of base: v.data = ...)
        live.append(ref)
        if view is not written:
            view._node = Node("as_strided", (base,), (), (device_positions(view), base.shape,
                                                          spec), base._device.ops)
            view._requires_grad = True
    views[:] = live


# in-place ops whose result reads none of the values it replaces -> the name PyTorch gives
# their grad_fn (the random fills of fastnn.ops.inplace too, named as PyTorch's default)
OVERWRITES = {"zero_": "ZeroBackward0", "fill_": "FillBackward2", "copy_": "CopyBackwards"}


def overwritten(op: str, t, new):
    """``new`` (t's shape and dtype, values that replace all of t's) with a node
    ``overwrite`` over t's history: t's old history gets a zero gradient, ``new``'s its
    own. Without it a written non-leaf would keep no edge to its history (or would keep
    the old one, where the write ran under no_grad), and its leaves would end the
    backward with ``.grad`` None, or a wrong one, where PyTorch gives zeros."""
    old = type(t)._make(t._data, t._dtype, t._device)
    old._node, old._requires_grad = t._node, True
    hooks.hand_over(t, old)
    out = type(t)._make(new._data, t._dtype, t._device)
    name = OVERWRITES.get(op) or node_names.default_name(op.rstrip("_"))
    # (PyTorch's edges: copy_'s to its source, None where that has no history)
    inputs = (old, new if new._requires_grad else None)
    if op != "copy_" and not new._requires_grad:
        inputs = (old,)
    out._node = Node("overwrite", inputs, (), (name, (t._dtype.name, t._device.index)),
                     t._device.ops)
    out._requires_grad = True
    return out


def inplace(op: str, t, compute, *args, **kwargs):
    """``t.<op>_(...)``: ``compute(t, *args)`` out of place, then written into ``t``."""
    check_inplace(op, t)
    if op in OVERWRITES and grad_mode.switches.grad and t._requires_grad:
        new = overwritten(op, t, compute(t, *args, **kwargs))
    elif grad_mode.switches.grad and t._requires_grad:
        # the op reads t's values before the write: a snapshot with t's history and its
        # own copy of the array, so that its backward still sees the old values
        old = type(t)._make(copy_array(t), t._dtype, t._device)
        old._node, old._requires_grad = t._node, True
        hooks.hand_over(t, old)
        new = compute(old, *args, **kwargs)
    else:
        new = compute(t, *args, **kwargs)
    if getattr(new, "_dtype", None) is None:
        raise TypeError(f"{op}: expected a tensor result, got {type(new).__name__}")
    if new.shape != t.shape:
        raise RuntimeError(f"{op}: the result's shape {new.shape} does not match the "
                           f"in-place tensor's shape {t.shape} (it would broadcast it)")
    if new._dtype is not t._dtype:
        if dtypes.category(new._dtype) > dtypes.category(t._dtype):
            # as PyTorch's can_cast: no float into an integer, no number into a bool
            raise RuntimeError(f"{op}: result type {new._dtype.name} can't be cast to the "
                               f"desired output type {t._dtype.name}")
        new = astype(new, t._dtype)
    write(t, new)
    return t
