"""What the differentiating transforms share: fresh inputs, argnums and one backward pass.

fastnn records one tape, not PyTorch's stack of transform "levels". A transform runs the
user's function on fresh inputs (a new leaf for a tensor that does not require grad, a
differentiable view of one that does) and takes its gradients with
:func:`fastnn.autograd.grad`. Whether the results stay on the tape is decided by
:func:`reaches_outside`: when the function's output depends on some tensor requiring grad
other than this transform's own fresh leaves (the caller's inputs that require grad, a
captured parameter, or the tensors of an enclosing transform), the backward is recorded
(``create_graph``), so that ``grad(grad(f))``, ``jacrev(grad(f))`` and gradients of the
results reach those tensors; otherwise the results are plain tensors that do not require
grad. A tensor captured from outside is therefore a constant for the transform, as in
PyTorch, but gradients still flow to it from the results when it requires grad.
"""

from __future__ import annotations

from fastnn.autograd import grad_mode
from fastnn.autograd.functional import grad as autograd_grad
from fastnn.func import pytree
from fastnn.ops.tensor import Tensor


def reaches_outside(tensors, ours: set) -> bool:
    """Whether the graph behind any of ``tensors`` reaches a tensor that requires grad and
    whose id is not in ``ours`` (a leaf of the caller's, or any node it cannot see into)."""
    stack = []
    for t in tensors:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        if t._node is None:
            if id(t) not in ours:
                return True
        else:
            stack.append(t._node)
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.opaque:  # a checkpoint's backward reaches tensors that are not its inputs
            return True
        for t, parent, needs in zip(node.inputs, node.parents, node.needs):
            if not needs:
                continue
            if parent is not None:
                stack.append(parent)
            elif id(t) not in ours:
                return True
    return False


def fresh(api: str, leaves: list) -> tuple[list, set]:
    """Differentiable stand-ins for ``leaves`` and the ids of those that are new leaves."""
    result, ours = [], set()
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if not x.is_floating_point():
            raise RuntimeError(f"{api}: only Tensors of floating point dtype can be "
                               f"differentiated, got a Tensor with dtype {x.dtype}")
        if x.requires_grad:
            result.append(x.view_as(x))  # the caller's graph goes on through the view
        else:
            leaf = x.detach().requires_grad_(True)
            ours.add(id(leaf))
            result.append(leaf)
    return result, ours


def wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int) or isinstance(argnum, bool):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def check_argnums(argnums) -> None:
    """Raise PyTorch's error for an argnums that is not an int or a tuple of them."""
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    elif not isinstance(argnums, int) or isinstance(argnums, bool):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


class Traced:
    """``func(*args)`` run on fresh stand-ins of the arguments at ``argnums`` (None: all).

    ``inputs``: the stand-ins' leaves (what gradients are taken with respect to);
    ``pack(grads)``: those gradients in the arguments' structure (the argnum's tree for an
    int argnums, a tuple of trees for a tuple or None); ``output``: what func returned.
    """

    def __init__(self, api: str, func, args: tuple, kwargs: dict, argnums):
        if argnums is None:
            positions, self.single = tuple(range(len(args))), False
        else:
            check_argnums(argnums)
            self.single = isinstance(argnums, int)
            positions = ((wrap_argnum(argnums, len(args)),) if self.single else
                         tuple(wrap_argnum(a, len(args)) for a in argnums))
            check_argnums(positions)  # -1 and 1 may name the same argument
        self.caller_grad = grad_mode.is_grad_enabled()
        args = list(args)
        self.specs, self.inputs, self.ours = [], [], set()
        for position in positions:
            leaves, spec = pytree.flatten(args[position])
            stand_ins, ours = fresh(api, leaves)
            args[position] = pytree.unflatten(stand_ins, spec)
            self.specs.append((spec, len(stand_ins)))
            self.inputs += stand_ins
            self.ours |= ours
        with grad_mode.enable_grad():
            self.output = func(*args, **kwargs)

    def keeps(self, tensors, extra=()) -> bool:
        """Whether results computed from ``tensors`` stay on the tape (see the module)."""
        return self.caller_grad and (any(isinstance(t, Tensor) and t.requires_grad
                                         for t in extra)
                                     or reaches_outside(tensors, self.ours))

    def pack(self, grads: list):
        trees, start = [], 0
        for spec, count in self.specs:
            trees.append(pytree.unflatten(grads[start:start + count], spec))
            start += count
        return trees[0] if self.single else tuple(trees)


def gradients(outputs, inputs, grad_outputs, create_graph: bool) -> list:
    """sum over outputs of J^T grad_output, one tensor per input (zeros for an input no
    output depends on); the graph is kept for further passes."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    found = [None] * len(inputs)
    if pairs:
        with grad_mode.set_grad_enabled(create_graph):
            found = autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                                  retain_graph=True, create_graph=create_graph,
                                  allow_unused=True)
    return [x.new_zeros(x.shape) if g is None else g for g, x in zip(found, inputs)]


def finish(tree, keep: bool):
    """``tree`` with its tensors detached unless they stay on the tape."""
    if keep:
        return tree
    leaves, spec = pytree.flatten(tree)
    return pytree.unflatten([t.detach() if isinstance(t, Tensor) else t for t in leaves],
                            spec)


def detach_aux(aux, traced: Traced):
    """The auxiliary output (tensors only, as PyTorch's): each tensor detached unless its
    graph reaches outside the transform."""
    leaves, spec = pytree.flatten(aux)
    for t in leaves:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
    return pytree.unflatten([t if traced.keeps([t]) else t.detach() for t in leaves], spec)
