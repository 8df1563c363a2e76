"""Custom differentiable functions, as PyTorch's ``torch.autograd.Function``.

Subclass :class:`Function`, write ``forward`` and ``backward`` as static methods and
call ``MyFn.apply(*args)``. ``forward`` runs with recording off; its outputs (a
tensor, or a tuple) get one tape node, :class:`FunctionNode`, whose rule
(``custom_function`` in :mod:`fastnn.autograd.rules_custom`) calls ``backward``
with one gradient per output and takes back one gradient per input.

A single differentiable output carries the node itself. With several, each output
carries a small ``custom_function_output`` node that hands its whole gradient to
the shared record and sends a zero scalar on to the function's node, through a
hidden scalar tensor: the engine runs that node after every output's node, so
``backward`` sees all the gradients of one pass at once.
"""

from __future__ import annotations

import functools
import inspect
import weakref

import numpy as np

from fastnn.api import dtypes
from fastnn.autograd import engine, grad_mode, hooks
from fastnn.autograd.function_ctx import FunctionCtx, _is_tensor, _own, _SavedOutput

__all__ = ["Function", "FunctionCtx", "FunctionNode", "once_differentiable"]


class FunctionNode(engine.Node):
    """The tape node of one ``apply``: named ``<Function>Backward`` as PyTorch names it."""

    released_name = "Function"  # the class's name, kept when a backward freed the record

    def name(self) -> str:
        record = self.attrs[0] if isinstance(self.attrs, tuple) else self.attrs
        return f"{record.name if record is not None else self.released_name}Backward"

    def release(self) -> None:
        """As :meth:`engine.Node.release`; a call whose ctx saved tensors cannot run again."""
        record = self.attrs[0] if isinstance(self.attrs, tuple) else self.attrs
        if record is not None and any(t is not None for t in record.ctx._saved):
            self.released_name = record.name
            self.inputs = self.saved = self.attrs = None
        else:
            super().release()

    def __repr__(self) -> str:
        # as PyTorch's, which names the class by its module: torch.autograd.function.<name>
        return f"<fastnn.autograd.function.{self.name()} object at {hex(id(self))}>"


class _Record:
    """One call's state for backward: the class, ctx, the inputs and the outputs' metadata."""

    def __init__(self, fn_cls, ctx, args, outs, differentiable, tensor_cls):
        self.fn_cls, self.ctx, self.name = fn_cls, ctx, fn_cls.__name__
        self.tensor_cls = tensor_cls
        self.args = tuple(a if _is_tensor(a) else _NonTensor for a in args)
        self.outs = tuple((o.shape, o._dtype, o._device) if _is_tensor(o) else None
                          for o in outs)
        self.differentiable = differentiable
        self.grads = [None] * len(outs)  # what the output nodes handed over this pass
        self.stamp = engine._clock

    def take(self, index, grad):
        """The ``custom_function_output`` rule: keep the output's gradient, send on a zero."""
        self.grads[index] = grad
        return (self.zero,)

    def check_versions(self, tensors) -> None:
        for i, t in enumerate(tensors):
            if t is None:
                continue
            base = t._view[0] if t._view is not None else t
            if base._storage is not None and base._storage.version > self.stamp:
                raise RuntimeError(
                    f"{self.name}: saved tensor {i} (shape {tuple(t.shape)}) was modified by an "
                    f"in-place operation after {self.name}.forward saved it; clone it before "
                    f"the in-place op, or use the out-of-place form")

    def _grad_outputs(self, grad):
        grads = self.grads
        if len(self.differentiable) == 1:
            grads = [None] * len(self.outs)
            grads[self.differentiable[0]] = grad
        self.grads = [None] * len(self.outs)
        cls, result = self.tensor_cls, []
        for g, meta in zip(grads, self.outs):
            if g is not None and not isinstance(g, cls):
                g = cls._make(g, meta[1], meta[2])
            elif g is None and meta is not None and self.ctx.materialize_grads:
                shape, dtype, device = meta
                g = cls._make(device.ops.full(shape, 0.0, dtype.name, device.index), dtype,
                              device)
            result.append(g)
        return result

    def backward(self, grad):
        """The ``custom_function`` rule: ``fn_cls.backward`` on the gradients of the outputs,
        its results checked against the inputs. Tensors under create_graph, else raw."""
        create = grad_mode.is_grad_enabled()  # the engine enables grad under create_graph
        result = self.fn_cls.backward(self.ctx, *self._grad_outputs(grad))
        result = result if isinstance(result, tuple) else (result,)
        expected = len(self.args)
        if len(result) < expected or any(g is not None for g in result[expected:]):
            raise RuntimeError(
                f"{self.name}.backward returned {len(result)} gradients, expected {expected} "
                f"(one per argument of forward, None for a non-tensor or one without grad)")
        grads = [self._checked(i, a, g, create) for i, (a, g) in
                 enumerate(zip(self.args, result))]
        if grad_mode.is_anomaly_enabled():
            for i, g in enumerate(grads):
                if g is not None:
                    host = np.asarray(self.args[i]._device.ops.to_numpy(getattr(g, "_data", g)))
                    if dtypes.floating_kind(host.dtype) and not np.isfinite(host).all():
                        raise FloatingPointError(f"detect_anomaly: {self.name}.backward "
                                                 f"returned NaN or Inf for input {i}")
        return grads

    def _checked(self, i, arg, g, create):
        if g is None:
            return None
        if arg is _NonTensor:
            raise RuntimeError(
                f"{self.name}.backward returned a gradient for argument {i}, which is not a "
                f"Tensor; return None in its place")
        if not isinstance(g, self.tensor_cls):
            raise TypeError(f"{self.name}.backward: gradient {i} must be a Tensor or None, "
                            f"got {type(g).__name__}")
        if not arg._requires_grad:
            return None
        shape, want = tuple(g.shape), tuple(arg.shape)
        lead = len(shape) - len(want)
        if shape != want and (lead < 0 or any(
                n != 1 and n != m for n, m in zip(want, shape[lead:]))):
            raise RuntimeError(
                f"{self.name}.backward returned a gradient of shape {shape} for argument {i}, "
                f"which has shape {want}; return one gradient shaped like each input")
        if g._device != arg._device:
            raise RuntimeError(f"{self.name}.backward returned gradient {i} on {g._device}, "
                               f"its input is on {arg._device}")
        if g._dtype is not arg._dtype:
            g = g.to(arg._dtype)
        return g if create else g._data


class _NonTensorType:
    def __repr__(self):
        return "<non-tensor>"


_NonTensor = _NonTensorType()


class Function:
    """A differentiable function with a hand-written gradient, as PyTorch's.

    Define ``forward(ctx, *args, **kwargs)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)`` as
    static methods, and call ``MyFn.apply(*args)``. ``forward`` runs with grad
    recording off and returns a Tensor or a tuple. ``backward`` gets one gradient per
    output and returns one per forward argument (None for non-tensors and inputs that
    need none: see ``ctx.needs_input_grad``). Built of fastnn ops, ``backward`` is
    itself differentiable under ``create_graph=True``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__}: call the class's apply "
                           f"({type(self).__name__}.apply(...)), not an instance")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The function's value; write it in a subclass."""
        raise NotImplementedError("Function.forward: define forward as a staticmethod")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Save what ``backward`` needs, when ``forward`` takes no ctx (PyTorch 2 style)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradients of the inputs from those of the outputs; write it in a subclass."""
        raise NotImplementedError("Function.backward: define backward as a staticmethod")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args`` and record one node for ``backward`` on its outputs."""
        ctx = FunctionCtx()
        grad_on = grad_mode.is_grad_enabled()
        split = cls.setup_context is not Function.setup_context
        if split:  # as PyTorch: setup_context's inputs are every argument, defaults too
            args, kwargs = _bind_defaults(cls.forward, args, kwargs)
        tensors = [a for a in args if _is_tensor(a)]
        ctx.needs_input_grad = tuple(_is_tensor(a) and grad_on and a._requires_grad
                                     for a in args)
        with grad_mode.no_grad():
            if split:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(output, tuple)
        outs = [output] if single else list(output)
        if not any(ctx.needs_input_grad):
            return output
        inputs = {id(t) for t in tensors}
        dirty = _check_dirty(cls, ctx, outs)
        for k, o in enumerate(outs):
            if _is_tensor(o) and id(o) not in dirty and (id(o) in inputs or o._requires_grad):
                outs[k] = o.detach()  # an input returned as is: a new tensor of its storage
        differentiable = [k for k, o in enumerate(outs) if _is_tensor(o)
                          and o._dtype.is_floating and id(o) not in ctx._non_differentiable]
        if differentiable:
            # a dirty input is the output itself: the node's edge goes to its old history
            _record(cls, ctx, tuple(_before_write(a) if id(a) in dirty else a for a in args),
                    outs, differentiable)
        if grad_mode.is_anomaly_enabled():
            for k in differentiable:
                engine.check_finite(outs[k]._device.ops, outs[k]._data,
                                    f"the forward of {cls.__name__}")
        return outs[0] if single else tuple(outs)


@functools.lru_cache(maxsize=256)
def _signature(forward) -> inspect.Signature:
    return inspect.signature(forward)


def _bind_defaults(forward, args, kwargs) -> tuple:
    """(args, kwargs) of a call to ``forward`` with its defaults filled in and keyword
    arguments moved to their positions, as PyTorch's ``bind_default_args``."""
    bound = _signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _check_dirty(cls, ctx, outs) -> set:
    """The ids of the tensors ``forward`` marked dirty, checked as PyTorch checks them."""
    dirty = {id(t) for t in ctx._dirty}
    returned = {id(o) for o in outs if _is_tensor(o)}
    for t in ctx._dirty:
        if id(t) not in returned:
            raise RuntimeError(f"{cls.__name__}: some elements marked as dirty during the "
                               f"forward method were not returned as output; return every "
                               f"tensor passed to ctx.mark_dirty")
        if t._requires_grad and t._node is None:
            raise RuntimeError(f"{cls.__name__}: a leaf tensor that requires grad is used in "
                               f"an in-place operation (marked dirty); pass a copy "
                               f"(x.clone()) or call it under no_grad")
        if t._view is not None and t._requires_grad:
            raise NotImplementedError(
                f"{cls.__name__}: mark_dirty on a view of a tensor with history is not "
                f"supported by fastnn; pass a copy (x.clone()) and write into that")
    return dirty


def _before_write(t):
    """A tensor of ``t``'s array with t's history before the call wrote into it."""
    old = type(t)._make(t._data, t._dtype, t._device)
    old._node, old._requires_grad = t._node, t._requires_grad
    hooks.hand_over(t, old)
    return old


def _record(cls, ctx, args, outs, differentiable) -> None:
    """Attach the node of one call to its differentiable outputs."""
    first = outs[differentiable[0]]
    tensor_cls, device = type(first), first._device  # the class lives above this layer
    record = _Record(cls, ctx, args, outs, differentiable, tensor_cls)
    ctx._record = record
    positions = {id(o): k for k, o in enumerate(outs) if _is_tensor(o)}
    saved = []
    for t in ctx._saved:
        if t is not None and id(t) in positions and outs[positions[id(t)]] is t:
            t = _SavedOutput(t)
        saved.append(t)
    ctx._saved = tuple(saved)
    outputs_saved = {positions[id(s.ref())]: s for s in saved if isinstance(s, _SavedOutput)}
    inputs = tuple(a if _is_tensor(a) else None for a in args)
    node = FunctionNode("custom_function", inputs, (), record, device.ops)
    node.opaque = getattr(cls, "_opaque", False)
    if len(differentiable) == 1:
        _own(first, node)
        if differentiable[0] in outputs_saved:
            outputs_saved[differentiable[0]].owner = weakref.ref(node)
        return
    zero = device.ops.full((), 0.0, first._dtype.name, device.index)
    hidden = tensor_cls._make(zero, first._dtype, device)
    _own(hidden, node)
    record.zero = zero
    for k in differentiable:
        _own(outs[k], _output_node(hidden, record, k))
        if k in outputs_saved:
            outputs_saved[k].owner = functools.partial(
                _output_node_again, weakref.ref(hidden), weakref.ref(record), k)


def _output_node(hidden, record, k):
    """The node of output ``k`` of a call with several: it hands its gradient to the call."""
    return FunctionNode("custom_function_output", (hidden,), (), (record, k), hidden._device.ops)


def _output_node_again(hidden_ref, record_ref, k):
    """A new node for output ``k`` while the call's node lives (else None)."""
    hidden, record = hidden_ref(), record_ref()
    return None if hidden is None or record is None else _output_node(hidden, record, k)


def once_differentiable(backward):
    """Decorate a Function's ``backward`` that is not itself differentiable: it runs with
    recording off, and differentiating its result (``create_graph=True``) raises."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with grad_mode.no_grad():
            result = backward(ctx, *grad_outputs)
        carriers = tuple(g for g in grad_outputs if _is_tensor(g) and g._requires_grad)
        if not (grad_mode.is_grad_enabled() and carriers):
            return result
        single = not isinstance(result, tuple)
        wrapped = []
        for g in ([result] if single else result):
            if _is_tensor(g) and g._dtype.is_floating:
                g = g.detach()
                node = engine.Node("once_differentiable", carriers, (), backward.__qualname__,
                                   g._device.ops)
                g._node, g._requires_grad = node, True
            wrapped.append(g)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper
