"""PyTorch's ``torch.autograd.functional``: jacobian, hessian, vjp, jvp, vhp and hvp.

Each is built on :func:`fastnn.autograd.grad`, as PyTorch's are: ``vjp`` is one
backward pass with ``v`` as the gradient of the outputs; ``jacobian`` one backward
per output element; ``jvp`` and ``hvp`` use the double-backward trick (the gradient
of a backward pass with respect to its own ``grad_outputs``); ``hessian`` is the
jacobian of the jacobian. Arguments, results and errors follow PyTorch's: a Tensor
or a tuple of Tensors in, the same shape of result out; without ``create_graph``
the results are detached; ``strict=True`` raises where an output does not depend
on an input (instead of giving zeros). ``vectorize=True`` (PyTorch's vmap) is
accepted and computes the same values one row at a time.
"""

from __future__ import annotations

from fastnn.autograd import grad_mode
from fastnn.autograd.functional import grad
from fastnn.ops.joining import stack
from fastnn.ops.tensor import Tensor

_STRATEGIES = ("forward-mode", "reverse-mode")


def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether ``value`` was a tuple, ``value`` as a tuple of Tensors)."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = (f"the value at index {i}" if is_tuple else f"the given {arg_name}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} has type {type(item).__name__}.")
    return is_tuple, items


def _preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors for the user's function: a differentiable view under
    ``create_graph`` (so gradients reach the caller's graph), else detached leaves."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(need_graph) for x in inputs)


def _postprocess(value, create_graph: bool):
    if isinstance(value, tuple):
        return tuple(_postprocess(v, create_graph) for v in value)
    return value if create_graph else value.detach()


def _untuple(value, was_tuple):
    """Undo the tupling: ``was_tuple`` is one flag, or (outer, inner) for a nested result."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            value = tuple(v[0] for v in value)
        return value if outer else value[0]
    return value if was_tuple else value[0]


def _validate_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(other) != len(v):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prefix = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {el_other.shape} but "
                               f"got {el_v.shape}.")


def _check_requires_grad(values: tuple, what: str, strict: bool) -> None:
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None or not value.requires_grad:
            raise RuntimeError(f"The {what} of the user-provided function does not require "
                               f"gradients (entry {i}); strict mode needs every {what} to "
                               "depend on the inputs.")


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """autograd.grad over the outputs that require grad; None for an unused input."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in "
                  "the grad_outputs when using the double backward trick to compute forward "
                  "mode gradients.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, stage: str) -> tuple:
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i)
                                   + " This is not allowed in strict mode.")
            g = ref.new_zeros(ref.shape)
        out.append(g)
    return tuple(out)


def _v_or_one(fn_name: str, v, against: tuple, against_is_tuple: bool, create_graph, what):
    if v is None:
        if len(against) != 1 or against[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the {what} is a single "
                               "Tensor with a single element.")
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _preprocess(v, create_graph, need_graph=False)
    _validate_v(v, against, against_is_tuple)
    return v


def _call(fn_name: str, func, inputs: tuple, strict: bool) -> tuple[bool, tuple]:
    is_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                  fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    return is_tuple, outputs


def _single_output(fn_name: str, is_tuple: bool, outputs: tuple) -> None:
    if is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _call("vjp", func, inputs, strict)
        v = _v_or_one("vjp", v, outputs, outputs_tuple, create_graph,
                      "user-provided function returns")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _fill_in_zeros(_grad(outputs, inputs, v, create_graph), inputs, strict, "back")
    return (_untuple(_postprocess(outputs, create_graph), outputs_tuple),
            _untuple(_postprocess(result, create_graph), inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        v = _v_or_one("jvp", v, inputs, inputs_tuple, create_graph,
                      "input to the user-provided function")
        outputs_tuple, outputs = _call("jvp", func, inputs, strict)
        # the backward is linear in grad_outputs: their value does not matter (but finite)
        grad_outputs = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(grad_inputs, grad_outputs, v, create_graph)
        result = _fill_in_zeros(result, outputs, strict, "back_trick")
    return (_untuple(_postprocess(outputs, create_graph), outputs_tuple),
            _untuple(_postprocess(result, create_graph), outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for one output and one input a Tensor of
    shape ``output.shape + input.shape``; tuples (of tuples) as PyTorch's otherwise."""
    if strategy not in _STRATEGIES:
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         'Hint: If your function has more outputs than inputs, "forward-mode" '
                         'tends to be more performant. Otherwise, prefer to use '
                         '"reverse-mode".')
    if strategy == "forward-mode":  # PyTorch's limits; the values are computed in reverse
        if create_graph:
            raise NotImplementedError('jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together')
        if strict:
            raise RuntimeError('jacobian: `strict=True` and `strategy="forward-mode"` are not '
                               'supported together')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-"
                                      "reverse Hessian is only implemented for "
                                      "`vectorize=True`.")
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _call("jacobian", func, inputs, strict)
        result = tuple(_jacobian_of(i, out, inputs, create_graph, strict)
                       for i, out in enumerate(outputs))
    return _untuple(_postprocess(result, create_graph), (outputs_tuple, inputs_tuple))


def _jacobian_of(i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool):
    """One output's rows of the Jacobian, one tensor per input."""
    rows = [[] for _ in inputs]
    flat = out.reshape(-1)
    for j in range(out.numel()):
        grads = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {k}. This is not allowed in "
                                       "strict mode.")
                g = x.new_zeros(x.shape)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is "
                                   f"independent of input {k}. This is not allowed in strict "
                                   "mode when create_graph=True.")
            rows[k].append(g)
    return tuple((stack(r) if r else x.new_zeros((0,) + tuple(x.shape))).reshape(
        tuple(out.shape) + tuple(x.shape)) for r, x in zip(rows, inputs))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``: ``input.shape + input.shape`` for one
    input; a tuple of tuples (one block per pair of inputs) for a tuple of them."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*args):
        out_tuple, out = _call("hessian", func, args, strict)
        _single_output("hessian", out_tuple, out)
        return out[0].squeeze()

    def jacobian_of_func(*args):
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(t.requires_grad_(True) for t in args)
        jac = jacobian(single_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(jacobian_of_func, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _untuple(result, (inputs_tuple, inputs_tuple))


def _second_order(fn_name: str, func, inputs, v, create_graph: bool, strict: bool):
    """The shared start of vhp and hvp: (inputs, tuple flag, v, outputs, tuple flag, jac)."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _preprocess(inputs, create_graph, need_graph=True)
    v = _v_or_one(fn_name, v, inputs, inputs_tuple, create_graph,
                  "input to the user-provided function")
    outputs_tuple, outputs = _call(fn_name, func, inputs, strict)
    _single_output(fn_name, outputs_tuple, outputs)
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs, inputs_tuple, v, outputs, outputs_tuple, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    with grad_mode.enable_grad():
        inputs, inputs_tuple, v, outputs, outputs_tuple, jac = _second_order(
            "vhp", func, inputs, v, create_graph, strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _fill_in_zeros(_grad(jac, inputs, v, create_graph), inputs, strict,
                                "double_back")
    return (_untuple(_postprocess(outputs, create_graph), outputs_tuple),
            _untuple(_postprocess(result, create_graph), inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of a scalar function, by the
    double-backward trick (equal to vhp's for a twice-differentiable function)."""
    with grad_mode.enable_grad():
        inputs, inputs_tuple, v, outputs, outputs_tuple, jac = _second_order(
            "hvp", func, inputs, v, create_graph, strict)
        grad_jac = tuple(x.new_zeros(x.shape).requires_grad_(True) for x in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(double_back, grad_jac, v, create_graph)
        result = _fill_in_zeros(result, inputs, strict, "double_back_trick")
    return (_untuple(_postprocess(outputs, create_graph), outputs_tuple),
            _untuple(_postprocess(result, create_graph), inputs_tuple))
