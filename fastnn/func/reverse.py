"""PyTorch's ``torch.func.grad``, ``grad_and_value``, ``vjp``, ``jvp`` and ``linearize``.

Each runs the function once on fresh inputs (see :mod:`fastnn.func.tracing`) and takes
its derivatives with backward passes on fastnn's tape: ``grad`` one pass, ``vjp_fn`` one
pass per call, ``jvp`` two (the double-vjp trick: the backward is linear in its
``grad_outputs``, so differentiating it with respect to them gives J v, with the values
of ``jvp``'s forward mode). Arguments, results and error messages follow PyTorch's.
"""

from __future__ import annotations

import functools

from fastnn.autograd import grad_mode
from fastnn.func import pytree
from fastnn.func.tracing import Traced, detach_aux, finish, gradients
from fastnn.ops.tensor import Tensor


def _split_aux(api: str, output, has_aux: bool):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return output


def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to the arguments at ``argnums`` and its value: the
    returned function gives ``(grad, value)`` (``(grad, (value, aux))`` with has_aux).
    ``func`` must return a scalar (0-dim) Tensor; the gradient has the argument's
    structure (a tuple of them for a tuple ``argnums``)."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        traced = Traced(api, func, args, kwargs, argnums)
        output, aux = _split_aux(api, traced.output, has_aux)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got "
                               f"{type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got "
                               f"tensor with {output.dim()} dims. Maybe you wanted to use "
                               "the vjp or jacrev APIs instead?")
        keep = traced.keeps([output])
        grads = gradients([output], traced.inputs, [None], create_graph=keep)
        value = finish(output, keep)
        if has_aux:
            return traced.pack(grads), (value, detach_aux(aux, traced))
        return traced.pack(grads), value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to the arguments at ``argnums`` (``(grad, aux)``
    with has_aux). Compose freely: ``grad(grad(f))``, ``vmap(grad(f))``."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _tensor_outputs(api: str, output) -> tuple[list, object]:
    leaves, spec = pytree.flatten(output)
    if not leaves:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output "
                           f"(got output = {output})")
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(leaf)}")
    return leaves, spec


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (and aux): ``vjp_fn(cotangents)`` gives v^T J for
    cotangents v of the output's structure, one tree per primal in a tuple; it can be
    called any number of times and is differentiable in the cotangents."""
    api = "vjp(f, *primals)"
    traced = Traced(api, func, primals, {}, None)
    output, aux = _split_aux(api, traced.output, has_aux)
    outputs, out_spec = _tensor_outputs(api, output)
    for out in outputs:
        if not out.is_floating_point():
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                               f"complex Tensors, got Tensor with dtype {out.dtype}")
    forward_keep = traced.keeps(outputs)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        given, spec = pytree.flatten(cotangents)
        if spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{pytree.describe(spec)}, primal output: "
                               f"{pytree.describe(out_spec)}")
        for ct, out in zip(given, outputs):
            if not isinstance(ct, Tensor) or ct.shape != out.shape:
                got = ct.shape if isinstance(ct, Tensor) else type(ct)
                raise RuntimeError(f"vjp_fn: a cotangent has shape {got}, expected "
                                   f"{out.shape} (the output's shape)")
        keep = (grad_mode.is_grad_enabled() and (forward_keep or any(
            ct.requires_grad for ct in given))) if create_graph is None else create_graph
        return traced.pack(gradients(outputs, traced.inputs, given, create_graph=keep))

    result = (finish(output, forward_keep), vjp_fn)
    return result + (detach_aux(aux, traced),) if has_aux else result


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J tangents)`` (and aux): the Jacobian-vector product, with the
    tangents of the primals' structure; computed by the double-vjp trick."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid "
                           "to call f(*primals).")
    primal_leaves, primal_spec = pytree.flatten(primals)
    tangent_leaves, tangent_spec = pytree.flatten(tangents)
    if primal_spec != tangent_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{pytree.describe(primal_spec)} and tangents with structure "
                           f"{pytree.describe(tangent_spec)}")
    for p, t in zip(primal_leaves, tangent_leaves):
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got "
                               f"{type(t)}")
        if isinstance(p, Tensor) and p.shape != t.shape:
            raise RuntimeError(f"{api}: Expected primals and tangents to have the same "
                               f"shape, got {p.shape} and {t.shape}")
    traced = Traced(api, func, primals, {}, None)
    output, aux = _split_aux(api, traced.output, has_aux)
    outputs, out_spec = _tensor_outputs(api, output)
    keep = traced.keeps(outputs, extra=tangent_leaves)
    # u: stand-ins for the output's gradient; the backward J^T u is linear in them
    dummies = [o.new_zeros(o.shape).requires_grad_(True) for o in outputs]
    with grad_mode.enable_grad():
        transposed = gradients(outputs, traced.inputs, dummies, create_graph=True)
    pairs = [(g, t) for g, t in zip(transposed, tangent_leaves) if g.requires_grad]
    if strict and not pairs:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                           "independent of the inputs. This is not allowed with strict=True.")
    if pairs:
        found = gradients([g for g, _ in pairs], dummies, [t for _, t in pairs], keep)
    else:
        found = [o.new_zeros(o.shape) for o in outputs]
    result = (finish(output, keep), pytree.unflatten(finish(found, keep), out_spec))
    return result + (detach_aux(aux, traced),) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals`` (PyTorch traces func once for it; fastnn runs :func:`jvp` at each call)."""
    output = finish(func(*primals), False)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn
