"""The reverse-mode tape: nodes recorded by ops, and an iterative backward pass.

Each differentiable op that sees an input requiring gradients attaches a
:class:`Node` to its output: the op's name, its input tensors, the raw arrays
its backward rule needs, and its attributes. ``backward`` sorts the nodes
topologically without recursion, runs each op's rule from
:mod:`fastnn.autograd.rules` once, sums the gradients of shared inputs,
reduces broadcast gradients back to the input's shape, and frees every node
as soon as it has been used.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np

from fastnn.api import dtypes
from fastnn.autograd import grad_mode, hooks, node_names, pieces, tensor_ops
from fastnn.autograd.pieces import Pieces
from fastnn.autograd.rules import RULES
from fastnn.autograd.sink import _SHARED, _accumulate, _Sink  # noqa: F401  (_SHARED: capture)

# The write clock: every in-place write stamps its storage with the next tick, and every
# node records the tick it was made at. A node whose inputs' storage was stamped later was
# recorded before a write into them (see check_saved). One int read per recorded op.
_clock = 0


class _Running(threading.local):
    """``running.leaf(t, g)``: what this thread's running pass does with a gradient reaching
    the leaf ``t`` (a pass run inside it by checkpoint's rule sends them there)."""

    leaf = staticmethod(lambda t, g: _accumulate(t, g, type(t)._make))  # outside a pass
    depth = 0  # backward passes running in this thread (a rule may run one inside)
    # [the node whose rule the innermost pass of this thread runs]: shadow mode's blame
    # reads it (blame.node_of) where reading the pass's frame locals cost a dict of 38
    rule_node: list = [None]
    callbacks: list = []  # queue_callback's, run when the outermost pass ends

    class Pass:  # with Pass(leaf): leaf is the running pass's, then the outer's again
        def __init__(self, leaf):
            self.leaf = leaf

        def __enter__(self):
            self.outer, running.leaf = running.leaf, self.leaf

        def __exit__(self, *exc):
            running.leaf = self.outer


running = _Running()
_STAY = contextlib.nullcontext()  # the fast path's scope outside any other pass


def tick() -> int:
    """Advance the write clock and return the new stamp (called by every in-place write)."""
    global _clock
    _clock += 1
    return _clock


class Node:
    """One recorded op: enough to compute its inputs' gradients from its output's.

    ``parents`` holds each input's node *as it was when the op ran*: an in-place write later
    gives the written tensor a new node, and this op's gradient must still reach the old one
    (as PyTorch's edges point at grad_fns, not tensors).
    """

    __slots__ = ("op", "inputs", "needs", "parents", "saved", "attrs", "ops", "stamp",
                 "stale", "out_id", "__weakref__")
    opaque = False  # True: its rule may reach any leaf (a checkpoint's recomputation)

    def __init__(self, op, inputs, saved, attrs, ops):
        self.op = op
        self.inputs = inputs
        # list comprehensions: a generator costs ~0.1 us more on every recorded op
        self.needs = tuple([t is not None and t._requires_grad for t in inputs])
        self.parents = tuple([t._node if t is not None else None for t in inputs])
        self.saved = saved
        self.attrs = attrs
        self.ops = ops
        self.stamp = _clock
        self.stale = None
        self.out_id = None  # id of the output's array when the rule saved it (check_saved)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"  # (PyTorch's grad_fn repr)

    def name(self) -> str:
        """The node's name as PyTorch spells the ``grad_fn`` of the same call:
        ``MulBackward0`` for ``mul`` (:mod:`fastnn.autograd.node_names`)."""
        return node_names.name_of(self)

    def release(self) -> None:
        """Free what the forward kept once a backward has used the node (without
        retain_graph). As PyTorch frees saved tensors: a node that saved arrays cannot run
        again; one that saved none (add, a view, select, sum) can, its inputs kept only as
        their metadata (:class:`Released`), so that it holds no activation alive."""
        if self.saved or self.opaque:
            self.inputs = self.saved = self.attrs = None
        elif self.inputs is not None:
            self.inputs = tuple([_released(t, child, need) for t, child, need in
                                 zip(self.inputs, self.parents, self.needs)])

    @property
    def next_functions(self) -> tuple:
        """PyTorch's edges of the graph: per input, (the node that made it, 0), or
        (:class:`AccumulateGrad` of a leaf that requires grad, 0), or (None, 0) for an
        input without gradient (what graph walkers such as torchviz read)."""
        inputs = self.inputs or (None,) * len(self.parents)  # (freed by a backward)
        edges = zip(inputs, self.parents, self.needs)
        return node_names.edges_of(self, tuple(node_names.edge(*e) for e in edges))


class _Shape:
    """The ``_data`` of a :class:`Released`: the shape of the array it had."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


class Released:
    """What a released node keeps of an input (other than a leaf that requires grad): what
    the engine and the rules read of it (device, dtype, shape) and a weak reference to the
    tensor, for its hooks, retain_grad and ``inputs=`` while it lives (:func:`live`)."""

    __slots__ = ("ref", "_device", "_dtype", "_data", "_requires_grad")
    _hooks = _node = _view = None

    def __init__(self, t):
        self.ref = weakref.ref(t)
        self._device, self._dtype, self._data = t._device, t._dtype, _Shape(t._data.shape)
        self._requires_grad = t._requires_grad

    @property
    def ndim(self) -> int:
        return len(self._data.shape)


def _released(t, child, need):
    """What a released node keeps of its input ``t`` (see :meth:`Node.release`)."""
    if t is None or type(t) is Released or (child is None and need):
        return t  # a leaf that requires grad is kept, as PyTorch's AccumulateGrad keeps it
    return Released(t)


def live(t):
    """The tensor behind ``t`` (a node's input) while it lives, else ``t`` itself."""
    if type(t) is Released:
        found = t.ref()
        return t if found is None else found
    return t


def check_finite(ops, array, what: str) -> None:
    """Raise FloatingPointError if ``array`` holds a NaN or Inf (anomaly mode)."""
    host = np.asarray(ops.to_numpy(array))
    if dtypes.floating_kind(host.dtype) and not np.isfinite(host).all():
        raise FloatingPointError(f"detect_anomaly: {what} produced NaN or Inf")


def attach(out, op, inputs, saved=(), attrs=None):
    """Record ``op`` on ``out`` when grad mode is on and some input requires grad."""
    state = grad_mode._state
    if state.grad:
        for t in inputs:
            if t is not None and t._requires_grad:  # the slot: this runs on every op
                out._requires_grad = True
                node = out._node = Node(op, inputs, saved, attrs, out._device.ops)
                if saved:
                    node.out_id = id(out._data)
                break
    if state.anomaly:
        check_finite(out._device.ops, out._data, f"the forward of {op!r}")
    return out


def unbroadcast(ops, grad, shape):
    """Sum ``grad`` over the axes that broadcasting added or stretched to reach ``shape``."""
    gshape = grad.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if axes:
        grad = ops.sum(grad, axes, False)
    # (the sum gives the shape itself where only leading axes went: no reshape call then)
    return grad if tuple(grad.shape) == tuple(shape) else ops.reshape(grad, shape)


def _topological(roots, owners=None):
    """Nodes reachable from ``roots``, each after every node that consumes it.

    Kahn's algorithm on consumer counts: a node is released only when all its
    consumers are done. (A depth-first order that marks nodes when first seen
    can place a shared node before one of its consumers and lose gradient.)
    ``owners``, when given, is filled with id(node) -> the tensor it made.
    """
    consumers, stack = {}, []
    for node in roots:
        if id(node) not in consumers:
            consumers[id(node)] = 0
            stack.append(node)
    starts = list(stack)
    while stack:
        node = stack.pop()
        if node.inputs is None:
            raise RuntimeError(
                f"backward through the graph a second time (at {node.op!r}): the first "
                "backward freed it; pass retain_graph=True to the first backward (or "
                "autograd.grad), or recompute the forward pass"
            )
        for t, child in zip(node.inputs, node.parents):
            if child is not None:
                key = id(child)
                if key not in consumers:
                    consumers[key] = 0
                    stack.append(child)
                    if owners is not None:
                        owners[key] = live(t)
                consumers[key] += 1
    order, ready = [], [node for node in starts if not consumers[id(node)]]
    while ready:
        node = ready.pop()
        order.append(node)
        for child in node.parents:
            if child is not None:
                consumers[id(child)] -= 1
                if consumers[id(child)] == 0:
                    ready.append(child)
    return order


def queue_callback(fn) -> None:
    """Call ``fn()`` once the backward pass running in this thread has ended, every
    gradient delivered into ``.grad`` (PyTorch's ``_execution_engine.queue_callback``);
    callbacks run in the order queued, and are dropped if the pass raises."""
    if not running.depth:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a "
                           "hook that a backward pass runs")
    running.callbacks.append(fn)


def backward(tensor, grad_data, retain_graph=False, create_graph=False, inputs=None) -> None:
    """Propagate ``grad_data`` (a raw array shaped like ``tensor``; a Tensor under
    ``create_graph``) into the ``.grad`` of every leaf, or of ``inputs`` only."""
    run_backward((tensor,), (grad_data,), retain_graph, create_graph, inputs)


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None,
                 capture=False, leaf=None):
    """The backward pass (:func:`_backward_pass`), then, when it is the outermost one in
    this thread, the callbacks queued during it (:func:`queue_callback`)."""
    if not running.depth:
        running.callbacks = []
    running.depth += 1
    outer, running.rule_node = running.rule_node, [None]  # (a nested pass's own)
    try:
        found = _backward_pass(roots, root_grads, retain_graph, create_graph, inputs,
                               capture, leaf)
    except BaseException:
        running.depth -= 1
        running.rule_node = outer
        if not running.depth:
            running.callbacks = []
        raise
    running.depth -= 1
    running.rule_node = outer
    if not running.depth and running.callbacks:
        queued, running.callbacks = running.callbacks, []
        for fn in queued:
            fn()
    return found


def _backward_pass(roots, root_grads, retain_graph, create_graph, inputs, capture, leaf):
    """The backward pass from the tensors ``roots``, seeded with ``root_grads``.

    ``retain_graph`` keeps the nodes for another backward (else each is freed once
    used). ``create_graph`` runs the rules on Tensors through
    :class:`~fastnn.autograd.tensor_ops.TensorOps`, so the gradients are on the
    tape themselves. ``inputs`` (tensors) restricts the gradients delivered to
    those (and runs only the rules that lead to them); with ``capture`` they are
    returned, as a dict id(tensor) -> Tensor, instead of added into ``.grad``.
    ``leaf(tensor, grad)``, when given, takes every leaf's gradient instead of ``.grad``.
    The common call (no hooks, no inputs, no create_graph) keeps raw arrays and
    takes none of the branches marked ``general``.
    """
    cls = roots[0].__class__  # the tensor class lives above this layer: never import it
    targets = None if inputs is None else {id(t): t for t in inputs}
    general = create_graph or targets is not None or hooks.state.active or leaf is not None
    sink = _Sink(cls, targets, capture, create_graph, leaf, attach) if general else None
    make = cls._make
    grads, owners, seeds = {}, ({} if general else None), []
    for root, grad_data in zip(roots, root_grads):
        node = root._node
        if node is None:
            if general:
                sink.leaf(root, grad_data)
            else:
                _accumulate(root, grad_data, make)
            continue
        prev = grads.get(id(node))
        if prev is None:
            seeds.append(node)
            grads[id(node)] = grad_data
            if general:
                owners[id(node)] = root
        else:
            grads[id(node)] = sink.add(root, prev, grad_data) if general else node.ops.add(
                prev, grad_data)
    anomaly = grad_mode.is_anomaly_enabled()
    # slices' gradients kept as pieces, one cat when their tensor's rule runs (pieces.py)
    lazy = not general and not anomaly
    rule_node = running.rule_node
    order = _topological(seeds, owners)
    expand = None if targets is None else _leading_to(order, targets)
    # create_graph runs the same rules on Tensors (a few fused ones have Tensor versions)
    rules = tensor_ops.TENSOR_RULES if create_graph else RULES
    fast = _Running.leaf  # a fast pass inside a general one (a rule's) switches back too
    scope = _Running.Pass(sink.leaf if general else fast) if general or (
        running.leaf is not fast) else _STAY
    with grad_mode.enable_grad() if create_graph else grad_mode.no_grad(), scope:
        for node in order:
            grad_out = grads.pop(id(node), None)
            if grad_out is None:
                continue
            rule_node[0] = node
            if type(grad_out) is Pieces:
                grad_out = grad_out.array(node.ops)
            if node.stamp != _clock:
                check_saved(node)
            ops, view = node.ops, node
            if general:
                owner = owners[id(node)]
                grad_out = sink.reached(owner, grad_out)
                if expand is not None and id(node) not in expand:
                    continue
                if create_graph:
                    ops, view = sink.tensor_ops(ops), tensor_ops.view(node, owner)
            # the one place a rule runs; view is the node (its saved arrays as tensors
            # under create_graph, see tensor_ops.view)
            in_grads = None
            if lazy and node.op == "slice":
                piece = pieces.of_slice(node.attrs, grad_out)
                in_grads = None if piece is None else (piece,)
            if in_grads is None:
                in_grads = rules[node.op](ops, view, grad_out)
            for t, child, needed, g in zip(node.inputs, node.parents, node.needs, in_grads):
                if not needed or g is None:
                    continue
                if anomaly:
                    check_finite(node.ops, getattr(g, "_data", g), f"the backward of {node.op!r}")
                t_ops = sink.tensor_ops(t._device.ops) if create_graph else t._device.ops
                g = unbroadcast(t_ops, g, t._data.shape)
                if child is None:
                    if general:
                        sink.leaf(t, g)
                    else:
                        _accumulate(t, pieces.whole(t_ops, g), make)
                else:
                    key = id(child)
                    prev = grads.get(key)
                    if prev is None:
                        grads[key] = g
                    elif type(prev) is Pieces or type(g) is Pieces:
                        grads[key] = pieces.add(t_ops, prev, g)
                    else:
                        grads[key] = t_ops.add(prev, g)
            if not retain_graph:  # free the graph as we go: the saved arrays are no longer needed
                node.release()
        return sink.finish() if general else None


def _leading_to(order, targets) -> set:
    """The ids of the nodes in ``order`` whose rule sends gradient towards a target."""
    expand = set()
    for node in reversed(order):  # each node after the nodes that made its inputs
        if node.opaque:
            expand.add(id(node))
            continue
        for t, child in zip(node.inputs, node.parents):
            if t is not None and (id(live(t)) in targets or (
                    child is not None and id(child) in expand)):
                expand.add(id(node))
                break
    return expand


def check_saved(node) -> None:
    """RuntimeError when an array that ``node``'s rule reads was overwritten in place after
    the node was recorded (PyTorch's version-counter check)."""
    if node.stale is not None:
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"in-place operation: the output of {node.op!r} (shape {node.stale}) was written "
            f"in place after {node.op!r} saved it for backward; write into a copy instead "
            f"(y = y.clone() before the in-place op, or use the out-of-place form)")
    if not node.saved:
        return  # the rule reads no array of its inputs (add, reshape, slice, sum, ...)
    inputs = {id(t._data) for t in node.inputs if t is not None}
    saved = {id(a) for a in node.saved if hasattr(a, "shape")}
    # a saved array that is neither an input's nor the output's was derived from them (a
    # view, on a strided backend): then every input counts as saved. One of a dtype no
    # input has is not a view of them (gather's and scatter_add's int64 index): index_add_
    # into one tensor again and again (Mixtral's experts) raised here
    kinds = {str(t._data.dtype) for t in node.inputs if t is not None}
    derived = any(id(a) not in inputs and id(a) != node.out_id and str(a.dtype) in kinds
                  for a in node.saved if hasattr(a, "shape"))
    for i, t in enumerate(node.inputs):
        if t is None or not (derived or id(t._data) in saved):
            continue
        base = t._view[0] if t._view is not None else t  # its base (fastnn.ops.storage)
        storage = base._storage
        if storage is not None and storage.version > node.stamp:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by "
                f"an in-place operation: input {i} of {node.op!r} (a {t._dtype.name} tensor "
                f"of shape {tuple(t._data.shape)}) was written in place after {node.op!r} "
                f"saved it; clone it before the in-place op (x = x.clone()), or use the "
                f"out-of-place form (x = x + y instead of x += y)")
