"""PyTorch's ``torch.func.jacrev``, ``jacfwd`` and ``hessian``.

The Jacobian is built one row at a time: one backward pass per element of the output,
seeded with that element's one-hot vector (PyTorch vmaps the same passes). ``jacfwd``
gives the same values from the same passes (fastnn has no forward mode; the cost is one
pass per output element instead of one per input element). ``hessian`` is
``jacfwd(jacrev(f))``, as PyTorch's. Results: for each output tensor (in the output's
structure), the Jacobian with respect to the arguments at ``argnums`` (the argument's
structure; a tuple of them for a tuple ``argnums``), each of shape
``output.shape + input.shape``.
"""

from __future__ import annotations

import functools
import math

from fastnn.func import pytree
from fastnn.func.tracing import Traced, detach_aux, finish, gradients
from fastnn.ops.creation import eye
from fastnn.ops.joining import stack
from fastnn.ops.tensor import Tensor


def _outputs(api: str, output) -> tuple[list, object]:
    leaves, spec = pytree.flatten(output)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return only Tensors, got "
                               f"{type(leaf)}")
    if not leaves:
        raise RuntimeError(f"{api}: Expected f(*args) to return at least one Tensor")
    return leaves, spec


def _jacobian_of(out: Tensor, inputs: list, keep: bool) -> list:
    """d out / d input for each input, of shape out.shape + input.shape."""
    count = math.prod(out.shape)
    if count == 0:
        return [x.new_zeros(tuple(out.shape) + tuple(x.shape)) for x in inputs]
    basis = eye(count, dtype=out.dtype, device=out.device)
    rows = [[] for _ in inputs]
    for j in range(count):
        seed = basis[j].reshape(out.shape)
        for k, g in enumerate(gradients([out], inputs, [seed], create_graph=keep)):
            rows[k].append(g)
    return [stack(r).reshape(tuple(out.shape) + tuple(x.shape))
            for r, x in zip(rows, inputs)]


def _jacobian(api: str, func, argnums, has_aux: bool, chunk_size):
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"{api}: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        traced = Traced(f"{api}(f)(*args)", func, args, kwargs, argnums)
        output = traced.output
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(f"{api}(f, ...)(*args): output of function f should be a "
                                   "tuple: (output, aux) if has_aux is True")
            output, aux = output
        outputs, spec = _outputs(f"{api}(f, ...)(*args)", output)
        for out in outputs:
            if not out.is_floating_point():
                raise RuntimeError(f"{api}: Expected f(*args) to return floating-point "
                                   f"Tensors, got a Tensor with dtype {out.dtype}")
        keep = traced.keeps(outputs)
        blocks = [traced.pack(finish(_jacobian_of(out, traced.inputs, keep), keep))
                  for out in outputs]
        result = pytree.unflatten(blocks, spec)
        return (result, detach_aux(aux, traced)) if has_aux else result

    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, by reverse
    mode (one backward pass per output element); ``(jacobian, aux)`` with has_aux.
    ``chunk_size`` is accepted and checked; the rows are computed one at a time."""
    return _jacobian("jacrev", func, argnums, has_aux, chunk_size)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``: the values
    of PyTorch's forward-mode ``jacfwd``, computed as :func:`jacrev` computes them
    (``randomness`` is checked; with no vmap inside, it changes nothing)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")
    return _jacobian("jacfwd", func, argnums, has_aux, None)


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func`` with respect to the arguments at ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)``, of shape ``input.shape + input.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)
