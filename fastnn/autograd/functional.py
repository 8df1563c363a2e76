"""The autograd entry points, as PyTorch's: :func:`grad` and the checks behind ``backward``.

``Tensor.backward`` (one layer up) converts its arguments to tensors and calls
:func:`backward` here; both check their arguments once, then run
:func:`~fastnn.autograd.engine.run_backward`.
"""

from __future__ import annotations

import math

from fastnn.api.errors import DeviceMismatchError, ShapeError
from fastnn.autograd import engine, tensor_ops


def _tensors(op: str, name: str, value, cls=None) -> tuple:
    """``value`` (a Tensor or a sequence of them) as a tuple of Tensors."""
    items = (value,) if hasattr(value, "_node") else value
    try:
        items = tuple(items)
    except TypeError:
        raise TypeError(f"{op}: {name} must be a Tensor or a sequence of Tensors, "
                        f"got {type(value).__name__}") from None
    if not items:
        raise ValueError(f"{op}: {name} is empty; pass at least one Tensor")
    for i, t in enumerate(items):
        if not hasattr(t, "_node") or (cls is not None and not isinstance(t, cls)):
            raise TypeError(f"{op}: {name}[{i}] must be a Tensor, got {type(t).__name__}")
    return items


def _seed(op: str, output, given, create_graph: bool, what: str):
    """The gradient that starts the pass at ``output``: ones for a one-element output
    when ``given`` is None, else ``given`` (a Tensor) checked and cast to the output's
    dtype. Raw under ``create_graph=False``; a Tensor (kept on the tape) otherwise."""
    ops = output._device.ops
    if given is None:
        if math.prod(output._data.shape) != 1:
            raise RuntimeError(
                f"{op}: {what} may be left out only for a scalar output, got shape "
                f"{output.shape}; reduce it (e.g. .sum()) or pass {what} of that shape")
        return ops.full(output.shape, 1.0, output._dtype.name, output._device.index)
    if not isinstance(given, type(output)):
        raise TypeError(f"{op}: {what} must be a Tensor or None, got {type(given).__name__}")
    if given.shape != output.shape:
        raise ShapeError(f"{op}: {what} has shape {given.shape}, expected {output.shape} "
                         f"(the output's shape)")
    if given._device is not output._device and given._device != output._device:
        raise DeviceMismatchError(f"{op}: {what} is on {given._device}, the output on "
                                  f"{output._device}; move it with .to({str(output._device)!r})")
    if not given._dtype.is_floating:
        raise TypeError(f"{op}: {what} must be floating point, got {given._dtype.name}")
    if given._dtype is not output._dtype:  # as PyTorch: the gradient takes the output's dtype
        adapter = tensor_ops.TensorOps(ops, type(output), engine.attach)
        return adapter.astype(given, output._dtype.name) if create_graph else ops.astype(
            given._data, output._dtype.name)
    return given if create_graph else given._data


def _flags(op: str, retain_graph, create_graph) -> tuple[bool, bool]:
    if not isinstance(create_graph, bool):
        raise TypeError(f"{op}: create_graph must be True or False, got {create_graph!r}")
    if retain_graph is None:
        retain_graph = create_graph  # as PyTorch: a graph of the gradient needs the graph
    if not isinstance(retain_graph, bool):
        raise TypeError(f"{op}: retain_graph must be True, False or None, got {retain_graph!r}")
    return retain_graph, create_graph


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None
             ) -> None:
    """PyTorch's ``autograd.backward``: add d(tensors)/d(leaf), seeded with ``grad_tensors``
    (one per tensor; None for a one-element tensor, meaning 1), into the ``.grad`` of every
    leaf (or of ``inputs`` only), in one pass over all of them; ``tensor.backward(g)`` is
    ``backward(tensor, g)`` (see :meth:`fastnn.Tensor.backward`)."""
    retain_graph, create_graph = _flags("backward", retain_graph, create_graph)
    roots = _tensors("backward", "tensors", tensors)
    seeds = ((grad_tensors,) if grad_tensors is None or hasattr(grad_tensors, "_node")
             else tuple(grad_tensors))
    if grad_tensors is None:
        seeds = (None,) * len(roots)
    if len(seeds) != len(roots):
        raise ValueError(f"backward: got {len(seeds)} grad_tensors for {len(roots)} tensors; "
                         f"pass one per tensor (None for a one-element tensor)")
    for i, tensor in enumerate(roots):
        if not tensor._requires_grad:
            raise RuntimeError(
                ("backward() on a tensor" if len(roots) == 1 else f"backward: tensors[{i}] is a "
                 "tensor") + " that does not require grad: create the leaves with "
                "requires_grad=True (and not under no_grad)")
    if inputs is not None:
        inputs = _tensors("backward", "inputs", inputs, type(roots[0]))
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError(f"backward: inputs[{i}] does not require grad, so no "
                                   f"gradient can reach it")
    seeds = tuple(_seed("backward", t, g, create_graph, "grad") for t, g in zip(roots, seeds))
    engine.run_backward(roots, seeds, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, as PyTorch's autograd.grad.

    Returns a tuple with one Tensor per input: sum over outputs o of
    (d o / d input)^T grad_output. Nothing is added into any ``.grad``.

    - ``outputs``, ``inputs``: a Tensor or a sequence of Tensors; inputs must require grad.
    - ``grad_outputs``: one Tensor (or None for a one-element output, meaning 1) per output.
    - ``retain_graph``: keep the graph for another backward (default: ``create_graph``).
    - ``create_graph``: record the backward on the tape, so the returned gradients can be
      differentiated again (gradient penalties, Hessian-vector products).
    - ``allow_unused``: an input no output depends on gets None instead of an error.
    - ``materialize_grads``: such an input gets zeros instead of None (``allow_unused``
      then defaults to True, and False is refused, as in PyTorch).
    - ``is_grads_batched``: each grad_output's first dimension is a batch of vectors; the
      result stacks one gradient per vector (a loop of backward passes: what PyTorch's
      vmap would batch). ``only_inputs`` is PyTorch's deprecated no-op.
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("grad: materialize_grads=True needs allow_unused=True or unset "
                         "(an unused input's gradient becomes zeros)")
    allow_unused = bool(materialize_grads if allow_unused is None else allow_unused)
    outputs = _tensors("grad", "outputs", outputs)
    inputs = _tensors("grad", "inputs", inputs, type(outputs[0]))
    run = _batched_grad if is_grads_batched else _one_pass
    result = run(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    if materialize_grads:  # (an unused input's zeros have its shape, without a batch)
        result = tuple(_zeros(t) if g is None else g for t, g in zip(inputs, result))
    return result


def _one_pass(outputs: tuple, inputs: tuple, grad_outputs, retain_graph, create_graph,
              allow_unused: bool) -> tuple:
    """:func:`grad`'s one backward pass: a gradient (or None, when unused and allowed)
    per input."""
    retain_graph, create_graph = _flags("grad", retain_graph, create_graph)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        given = (grad_outputs,) if hasattr(grad_outputs, "_node") else tuple(grad_outputs)
        if len(given) != len(outputs):
            raise ValueError(f"grad: {len(given)} grad_outputs for {len(outputs)} outputs; "
                             f"pass one per output (None for a one-element output)")
        grad_outputs = given
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(f"grad: outputs[{i}] does not require grad (it has no path "
                               f"to a tensor with requires_grad=True)")
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] does not require grad; create it with "
                               f"requires_grad=True")
    seeds = tuple(_seed("grad", t, g, create_graph, f"grad_outputs[{i}]")
                  for i, (t, g) in enumerate(zip(outputs, grad_outputs)))
    found = engine.run_backward(outputs, seeds, retain_graph, create_graph, inputs,
                                capture=True)
    result = tuple(found.get(id(t)) for t in inputs)
    if not allow_unused:
        for i, g in enumerate(result):
            if g is None:
                raise RuntimeError(f"grad: inputs[{i}] was not used to compute the outputs; "
                                   f"pass allow_unused=True to get None for it")
    return result


def _batched_grad(outputs: tuple, inputs: tuple, grad_outputs, retain_graph, create_graph,
                  allow_unused: bool) -> tuple:
    """:func:`grad` with ``is_grads_batched``: one backward pass per row of the
    grad_outputs, the results stacked along a new first dimension."""
    given = (grad_outputs,) if hasattr(grad_outputs, "_node") else tuple(grad_outputs or ())
    if not given or any(g is None or not hasattr(g, "_node") or g.ndim == 0 for g in given):
        raise ValueError("grad: is_grads_batched=True needs a grad_output tensor per output, "
                         "each with a leading batch dimension")
    rows = given[0].shape[0]
    if any(g.shape[0] != rows for g in given):
        raise ValueError(f"grad: is_grads_batched=True: the grad_outputs' batch sizes differ "
                         f"({[g.shape[0] for g in given]})")
    each = [_one_pass(outputs, inputs, tuple(g[i] for g in given),
                      True if i < rows - 1 else retain_graph, create_graph, allow_unused)
            for i in range(rows)]
    return tuple(None if each[0][j] is None else _stack([e[j] for e in each])
                 for j in range(len(inputs)))


def _zeros(t):
    """Zeros like ``t`` (its dtype and device), without history."""
    dev = t._device
    return type(t)._make(dev.ops.full(t.shape, 0.0, t._dtype.name, dev.index), t._dtype, dev)


def _stack(tensors: list):
    """``tensors`` (one shape) stacked along a new first dimension, on the tape where they
    are (the hooks' recorded forms: what create_graph differentiates)."""
    first = tensors[0]
    adapter = tensor_ops.TensorOps(first._device.ops, type(first), engine.attach)
    return adapter.cat([adapter.reshape(t, (1,) + tuple(t.shape)) for t in tensors], 0)
