"""Activation checkpointing, as PyTorch's ``torch.utils.checkpoint``: trade compute for memory.

:func:`checkpoint` runs ``function`` with recording off, so none of its inner
activations are kept; the call is one tape node (a custom
:class:`~fastnn.autograd.Function`). Its backward runs ``function`` again with
recording on, from the same inputs and (``preserve_rng_state``) the same state of
fastnn's generator, so dropout draws the same numbers, and backpropagates through
that recomputed graph. The recomputation's own leaves (the parameters) get their
gradients through the outer backward pass (``.grad``, ``autograd.grad``'s inputs,
hooks, ``create_graph``), so the gradients are those of the plain call, bit for bit.
"""

from __future__ import annotations

import warnings

import fastnn
from fastnn.autograd import Function, enable_grad, engine

__all__ = ["checkpoint", "checkpoint_sequential"]


def _is_tensor(x) -> bool:
    return isinstance(x, fastnn.Tensor)


class _Checkpoint(Function):
    """``forward(ctx, function, preserve, keys, anchor, given, *values)``: ``function``
    without its graph, on ``values``, whose last ``len(keys)`` are the keyword arguments
    ``keys`` (so that tensors among them are inputs of the node too); ``anchor`` is None or
    a leaf that requires grad, which records the node when no argument requires grad (the
    parameters may); ``given`` is None or the outputs of a run already made (with the
    generator state before it)."""

    _opaque = True  # its backward reaches leaves that are not its inputs (the parameters)

    @staticmethod
    def forward(ctx, function, preserve, keys, anchor, given, *values):
        ctx.function, ctx.keys, ctx.values = function, keys, values
        if given is not None:  # (rng state, outputs, whether a tuple) of a run already made
            ctx.rng, outs, is_tuple = given
            output = outs if is_tuple else outs[0]
        else:
            ctx.rng = fastnn.get_rng_state() if preserve else None
            output = _call(function, keys, values)
        outs = output if isinstance(output, tuple) else (output,)
        ctx.shapes = tuple(o.shape if _is_tensor(o) else None for o in outs)
        return output

    @staticmethod
    def backward(ctx, *grad_outputs):
        inputs = []
        for a in ctx.values:  # the same values, as leaves of the recomputed graph
            if _is_tensor(a):
                d = a.detach()
                d.requires_grad_(a.requires_grad)
                a = d
            inputs.append(a)
        outs = _recompute(ctx, inputs)
        _check_same(ctx.shapes, outs)
        roots, seeds = [], []
        for o, g in zip(outs, grad_outputs):
            if _is_tensor(o) and o.requires_grad and g is not None:
                roots.append(o)
                seeds.append(g)
        create = fastnn.is_grad_enabled()  # the engine turns grad on under create_graph
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
            engine.run_backward(tuple(roots), tuple(s if create else s._data for s in seeds),
                                retain_graph=create, create_graph=create, leaf=leaf)
        grads = []
        for t in inputs:
            g = found.get(id(t)) if _is_tensor(t) else None
            if g is not None and not _is_tensor(g):
                g = fastnn.Tensor._make(g, t._dtype, t._device)
            grads.append(g)
        return (None, None, None, None, None, *grads)


def _call(function, keys, values):
    split = len(values) - len(keys)
    return function(*values[:split], **dict(zip(keys, values[split:])))


def _recompute(ctx, inputs) -> tuple:
    """``function`` run again with recording on, from the generator state of the forward."""
    if ctx.rng is None:
        with enable_grad():
            output = _call(ctx.function, ctx.keys, inputs)
    else:
        now = fastnn.get_rng_state()
        fastnn.set_rng_state(ctx.rng)
        try:
            with enable_grad():
                output = _call(ctx.function, ctx.keys, inputs)
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


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its activations; they are recomputed
    in backward.

    Gradients equal those of the plain call. ``preserve_rng_state`` (default True)
    replays fastnn's generator, so random ops (dropout) draw the same numbers again.
    ``use_reentrant=True`` follows PyTorch's reentrant variant: keyword arguments are
    refused, and if no argument requires grad the output does not either (with a
    warning), so the parameters inside get no gradient. ``False`` and None (PyTorch's
    recommended variant; PyTorch warns on None) record the node whenever the output
    depends on something that requires grad (when no argument does, the first run records
    to find out, then lets that graph go: a frozen block's output requires no grad, as
    PyTorch's).
    ``function`` must return a Tensor or a tuple; it must not change state that its
    second run would see. Tensors with a history (not leaves) that it reads must be
    passed as arguments, not taken from a closure: the recomputation would otherwise
    backpropagate into the graph outside the block a second time.
    """
    if use_reentrant is not None and not isinstance(use_reentrant, bool):
        raise TypeError(f"checkpoint: use_reentrant must be True, False or None, got "
                        f"{use_reentrant!r}")
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if not fastnn.is_grad_enabled():
        return function(*args, **kwargs)
    anchor = given = None
    if use_reentrant:
        if kwargs:
            raise ValueError(f"checkpoint: unexpected keyword arguments {sorted(kwargs)} with "
                             f"use_reentrant=True; pass use_reentrant=False to use them")
        if not any(_is_tensor(a) and a.requires_grad for a in args):
            warnings.warn("checkpoint: none of the inputs have requires_grad=True; with "
                          "use_reentrant=True the gradients will be None (pass "
                          "use_reentrant=False)", UserWarning, stacklevel=2)
    elif not any(_is_tensor(a) and a.requires_grad for a in (*args, *kwargs.values())):
        # PyTorch's output requires grad only where it depends on something that does (a
        # LoRA block merged for eval does not): run it once recording, to find out
        rng = fastnn.get_rng_state() if preserve_rng_state else None
        output = function(*args, **kwargs)
        outs = output if isinstance(output, tuple) else (output,)
        if not any(_is_tensor(o) and o.requires_grad for o in outs):
            return output
        given = (rng, tuple(o.detach() if _is_tensor(o) else o for o in outs),
                 isinstance(output, tuple))  # its graph goes; the node recomputes it
        anchor = fastnn.zeros((), requires_grad=True)
    return _Checkpoint.apply(function, bool(preserve_rng_state), tuple(kwargs), anchor, given,
                             *args, *kwargs.values())


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/callables) one after another on
    ``input``, in ``segments`` chunks: every chunk but the last is checkpointed.

    ``preserve_rng_state`` (keyword, default True) is passed to :func:`checkpoint`.
    """
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
