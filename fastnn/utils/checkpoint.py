"""Activation checkpointing, as PyTorch's ``torch.utils.checkpoint``: trade compute for memory.

:func:`checkpoint` runs ``function`` with recording off, so none of its inner
activations are kept; the call is one tape node (a custom
:class:`~fastnn.autograd.Function`). Its backward runs ``function`` again with
recording on, from the same inputs and (``preserve_rng_state``) the same state of
fastnn's generator, so dropout draws the same numbers, and backpropagates through
that recomputed graph. The recomputation's own leaves (the parameters) get their
gradients through the outer backward pass (``.grad``, ``autograd.grad``'s inputs,
hooks, ``create_graph``), so the gradients are those of the plain call, bit for bit.
Under ``create_graph`` the recomputation reads the inputs through a cut (:class:`_Cut`)
instead of detached copies, so that a second-order pass (a gradient penalty) goes on
into the inputs' history.
"""

from __future__ import annotations

import contextlib
import warnings

import fastnn
from fastnn.autograd import Function, enable_grad, engine
from fastnn.func import pytree

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]

_DETERMINISM_CHECKS = ("default", "none")  # PyTorch's determinism_check values


def _is_tensor(x) -> bool:
    return isinstance(x, fastnn.Tensor)


class _Checkpoint(Function):
    """``forward(ctx, function, preserve, anchor, *values)``: ``function(*values)`` without
    its graph (the non-reentrant variant passes a :class:`_Flat`, whose values are the
    leaves of every argument, keyword ones too); ``anchor`` is None or a leaf that
    requires grad, which records the node when no argument requires grad (the parameters
    may)."""

    _opaque = True  # its backward reaches leaves that are not its inputs (the parameters)

    @staticmethod
    def forward(ctx, function, preserve, anchor, *values):
        ctx.function, ctx.values = function, values
        given = getattr(function, "given", None)
        if given is not None:  # (the generator's state before it, outputs) of a run made
            (ctx.rng, output), function.given = given, None
        else:
            ctx.rng = fastnn.get_rng_state() if preserve else None
            output = function(*values)
        outs = output if isinstance(output, tuple) else (output,)
        ctx.shapes = tuple(o.shape if _is_tensor(o) else None for o in outs)
        return output

    @staticmethod
    def backward(ctx, *grad_outputs):
        create = fastnn.is_grad_enabled()  # the engine turns grad on under create_graph
        cut = {"open": True, "grads": {}}
        inputs = []
        for i, a in enumerate(ctx.values):
            if _is_tensor(a):
                if create and a.requires_grad:
                    # NOTE: under create_graph the gradients must stay functions of the
                    # real inputs (a second-order pass goes on into their history), so the
                    # recomputation reads them through a cut, not from detached copies
                    a = _Cut.apply(a, cut, i)
                else:  # the same values, as leaves of the recomputed graph
                    d = a.detach()
                    d.requires_grad_(a.requires_grad)
                    a = d
            inputs.append(a)
        outs = _recompute(ctx, inputs)
        if getattr(ctx.function, "check", True):
            _check_same(ctx.shapes, outs)
        roots, seeds = [], []
        for o, g in zip(outs, grad_outputs):
            if _is_tensor(o) and o.requires_grad and g is not None:
                roots.append(o)
                seeds.append(g)
        found = {}
        mine = {id(t) for t in inputs if _is_tensor(t)}
        outer = engine.running.leaf

        def leaf(t, g):
            if id(t) not in mine:
                outer(t, g)  # a parameter: its gradient joins the outer pass's
            else:
                prev = found.get(id(t))
                found[id(t)] = g if prev is None else (
                    prev + g if _is_tensor(g) else t._device.ops.add(prev, g))

        if roots:
            try:
                engine.run_backward(tuple(roots),
                                    tuple(s if create else s._data for s in seeds),
                                    retain_graph=create, create_graph=create, leaf=leaf)
            finally:
                cut["open"] = False
        grads = []
        for i, t in enumerate(inputs):
            g = found.get(id(t)) if _is_tensor(t) else None
            if g is None:
                g = cut["grads"].get(i)
            if g is not None and not _is_tensor(g):
                g = fastnn.Tensor._make(g, t._dtype, t._device)
            grads.append(g)
        return (None, None, None, *grads)


class _Cut(Function):
    """``forward(ctx, x, cut, index)``: ``x`` itself, as a new tensor of its history. While
    ``cut["open"]`` (the pass of the checkpoint's backward that runs the recomputed
    graph) the gradient stops here and is kept in ``cut["grads"][index]``; later passes
    through that graph (a second-order gradient) go on into ``x``'s history."""

    @staticmethod
    def forward(ctx, x, cut, index):
        ctx.cut, ctx.index = cut, index
        return x.clone()

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.cut["open"]:
            grads = ctx.cut["grads"]
            prev = grads.get(ctx.index)
            grads[ctx.index] = grad_out if prev is None else prev + grad_out
            return None, None, None
        return grad_out, None, None


def _recompute(ctx, inputs) -> tuple:
    """``function`` run again with recording on, from the generator state of the forward."""
    if ctx.rng is None:
        with enable_grad():
            output = ctx.function(*inputs)
    else:
        now = fastnn.get_rng_state()
        fastnn.set_rng_state(ctx.rng)
        try:
            with enable_grad():
                output = ctx.function(*inputs)
        finally:
            fastnn.set_rng_state(now)
    return output if isinstance(output, tuple) else (output,)


def _check_same(shapes, outs) -> None:
    again = tuple(o.shape if _is_tensor(o) else None for o in outs)
    if again != shapes:
        raise RuntimeError(
            f"checkpoint: the recomputed forward returned tensors of shapes {again}, the "
            f"first run {shapes}; the checkpointed function must compute the same thing when "
            f"run again (no state changed between the two runs)")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, early_stop=True, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its activations; they are recomputed
    in backward.

    Gradients equal those of the plain call. ``preserve_rng_state`` (default True)
    replays fastnn's generator, so random ops (dropout) draw the same numbers again.
    ``use_reentrant=True`` follows PyTorch's reentrant variant: keyword arguments are
    refused, and if no argument requires grad the output does not either (with a
    warning), so the parameters inside get no gradient. ``False`` (PyTorch's recommended
    variant) records the node whenever the output depends on something that requires grad
    (when no argument does, the first run records to find out, then lets that graph go: a
    frozen block's output requires no grad, as PyTorch's). None (not given) is True with a
    warning, as in PyTorch.
    ``function`` returns a Tensor or a tuple (with ``use_reentrant=False``, any nesting
    of tuples, lists and dicts, whose tensors all get gradients); it must not change
    state that its second run would see. Tensors with a history (not leaves) that it reads
    must be passed as arguments (with ``use_reentrant=False``, also inside tuples, lists
    and dicts among them), not taken from a closure: the recomputation would otherwise
    backpropagate into the graph outside the block a second time.

    PyTorch's options of the non-reentrant variant: ``context_fn`` returns two context
    managers, the first entered around the forward, the second around the recomputation;
    ``determinism_check="none"`` skips the check that the recomputation gives tensors of
    the first run's shapes ("default"); ``debug`` and ``early_stop`` are accepted and
    change nothing here (fastnn recomputes the whole block, and has no extra trace).
    """
    use_reentrant = _reentrant("checkpoint", use_reentrant)
    if context_fn is None:
        context_fn = noop_context_fn
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("checkpoint: passing context_fn or debug is only supported when "
                         "use_reentrant=False")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"checkpoint: determinism_check should be one of "
                         f"{list(_DETERMINISM_CHECKS)}, but got {determinism_check!r}")
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if not fastnn.is_grad_enabled():
        return function(*args, **kwargs)
    preserve = bool(preserve_rng_state)
    if use_reentrant:
        if kwargs:
            raise ValueError(f"checkpoint: unexpected keyword arguments {sorted(kwargs)} with "
                             f"use_reentrant=True; pass use_reentrant=False to use them")
        if not any(_is_tensor(a) and a.requires_grad for a in args):
            warnings.warn("checkpoint: none of the inputs have requires_grad=True; with "
                          "use_reentrant=True the gradients will be None (pass "
                          "use_reentrant=False)", UserWarning, stacklevel=2)
        return _Checkpoint.apply(function, preserve, None, *args)
    # the tensors anywhere in the arguments (a (k, v) tuple, a dict of masks) are inputs
    # of the node, and anywhere in the output its outputs, as PyTorch's variant allows
    values, spec = pytree.flatten((args, kwargs))
    flat = _Flat(function, spec, context_fn(), determinism_check != "none")
    anchor = None
    if not any(_is_tensor(a) and a.requires_grad for a in values):
        # whether the output requires grad depends on the block (a frozen one's does not,
        # as PyTorch's): one recorded run tells; its graph is let go, its outputs kept
        rng = fastnn.get_rng_state() if preserve else None
        outs = flat(*values)
        if not any(_is_tensor(o) and o.requires_grad for o in outs):
            return pytree.unflatten(list(outs), flat.spec)
        flat.given = (rng, tuple(o.detach() if _is_tensor(o) else o for o in outs))
        anchor = fastnn.zeros((), requires_grad=True)
    leaves = _Checkpoint.apply(flat, preserve, anchor, *values)
    return pytree.unflatten(list(leaves), flat.spec)


def _reentrant(where: str, use_reentrant) -> bool:
    """``use_reentrant`` as given, or PyTorch's default for None: True, with its warning."""
    if use_reentrant is None:
        warnings.warn(f"{where}: pass use_reentrant explicitly. Without it PyTorch (and so "
                      f"fastnn) use the reentrant variant, use_reentrant=True, in which a "
                      f"block none of whose inputs requires grad gets no gradients and "
                      f"keyword arguments are refused; use_reentrant=False is recommended",
                      UserWarning, stacklevel=3)
        return True
    if not isinstance(use_reentrant, bool):
        raise TypeError(f"{where}: use_reentrant must be True, False or None, got "
                        f"{use_reentrant!r}")
    return use_reentrant


class _Flat:
    """``function`` called on the leaves of its arguments (``args_spec`` rebuilds the
    ``(args, kwargs)`` nesting), returning the tuple of its output's leaves (a tensor, or
    any nesting of tuples, lists and dicts); ``spec`` rebuilds the output. The first call
    (the forward) runs inside ``contexts[0]``, later ones (recomputations) inside
    ``contexts[1]``; ``check``: whether a recomputation's shapes are checked."""

    def __init__(self, function, args_spec, contexts, check):
        self.function, self.args_spec, self.spec = function, args_spec, None
        self.contexts, self.check, self.calls = tuple(contexts), check, 0
        self.given = None  # (generator state, outputs) of a first run made already

    def __call__(self, *values):
        args, kwargs = pytree.unflatten(list(values), self.args_spec)
        context = self.contexts[min(self.calls, 1)]
        self.calls += 1
        with context:
            output = self.function(*args, **kwargs)
        leaves, self.spec = pytree.flatten(output)
        return tuple(leaves)


def noop_context_fn():
    """``context_fn``'s default: two contexts that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/callables) one after another on
    ``input``, in ``segments`` chunks: every chunk but the last is checkpointed.

    ``preserve_rng_state`` (keyword, default True) and ``use_reentrant`` (None: True, with
    a warning, as PyTorch's) are passed to :func:`checkpoint`.
    """
    use_reentrant = _reentrant("checkpoint_sequential", use_reentrant)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError(f"checkpoint_sequential: unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(functions, fastnn.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or not (
            1 <= segments <= max(len(functions), 1)):
        raise ValueError(f"checkpoint_sequential: segments must be an int from 1 to "
                         f"{len(functions)} (the number of functions), got {segments!r}")

    def run(start, stop):
        def forward(x):
            for fn in functions[start:stop]:
                x = fn(x)
            return x

        return forward

    size = len(functions) // segments
    stop = 0
    for start in range(0, size * (segments - 1), size):
        stop = start + size
        input = checkpoint(run(start, stop), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(stop, len(functions))(input)
