"""PyTorch's ``torch.func.functional_call``: run a module with other tensors in place of
its parameters and buffers (and ``stack_module_state``, which stacks the parameters of
several modules for ensembling with ``vmap``).

``functional_call(model, {"weight": w}, (x,))`` runs ``model(x)`` with ``w`` bound as
``model.weight`` for the duration of the call, then puts the module's own tensors
back (also when the forward raises). Gradients flow to the substituted tensors, not
to the module's parameters. Names are ``named_parameters()``/``named_buffers()``
paths; with ``tie_weights`` (the default) a tensor shared under several names is
replaced under all of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from fastnn.nn.module import Module
from fastnn.ops.joining import stack
from fastnn.ops.tensor import Tensor

_ABSENT = object()
_PROPERTY = object()  # _swap's mark for a tensor set through a class property


def _merged(dicts) -> dict:
    if isinstance(dicts, dict):
        return dicts
    if isinstance(dicts, Sequence) and not isinstance(dicts, str):
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        seen, repeated = set(), []
        for d in dicts:
            repeated += [k for k in d if k in seen and k not in repeated]
            seen.update(d)
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        return {k: v for d in dicts for k, v in d.items()}
    raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                     f"dicts, but got {type(dicts).__name__}")


def _tied_names(module: Module, given: dict, tie_weights: bool) -> dict:
    """``given`` extended to every other name of a tensor it replaces (``tie_weights``)."""
    if not tie_weights:
        return dict(given)
    names_of: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), []).append(name)
    result = dict(given)
    for names in names_of.values():
        present = [n for n in names if n in given]
        if not present or len(names) == 1:
            continue
        values = {id(given[n]) for n in present}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {present}, which "
                             "are tied. Consider using tie_weights=False")
        for n in names:
            result.setdefault(n, given[present[0]])
    return result


def _swap(module: Module, name: str, value):
    """Bind ``value`` at the dotted ``name``; returns how to undo it."""
    path, _, leaf = name.rpartition(".")
    owner = module.get_submodule(path)
    for table_name in ("_parameters", "_buffers"):
        table = getattr(owner, table_name)
        if leaf in table:
            old = table[leaf]
            table[leaf] = value
            object.__setattr__(owner, leaf, value)
            return owner, leaf, table, old
    if isinstance(getattr(type(owner), leaf, None), property):
        # a parametrized tensor (nn.utils.parametrize): as PyTorch's, set through the
        # property (the parametrization's right_inverse) and set back the value it had
        old = getattr(owner, leaf)
        setattr(owner, leaf, value)
        return owner, leaf, _PROPERTY, old
    old = owner.__dict__.get(leaf, _ABSENT)  # not a parameter or buffer: a plain attribute
    object.__setattr__(owner, leaf, value)
    return owner, leaf, None, old


def _restore(owner, leaf, table, old) -> None:
    if table is _PROPERTY:
        setattr(owner, leaf, old)
        return
    if table is not None:
        table[leaf] = old
    if old is _ABSENT:
        object.__delattr__(owner, leaf)
    else:
        object.__setattr__(owner, leaf, old)


@contextlib.contextmanager
def _reparametrized(module: Module, tensors: dict, tie_weights: bool, strict: bool):
    tensors = _tied_names(module, tensors, tie_weights)
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | {
            n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(known - set(tensors)), sorted(set(tensors) - known)
        if missing or unexpected:
            lines = ([f"\tUnexpected key(s): {', '.join(map(repr, unexpected))}."]
                     if unexpected else [])
            lines += [f"\tMissing key(s): {', '.join(map(repr, missing))}."] if missing else []
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n"
                               + "\n".join(lines))
    undo = []
    try:
        for name, value in tensors.items():
            if not isinstance(value, Tensor):
                raise TypeError(f"functional_call: the value for {name!r} must be a Tensor, "
                                f"got {type(value).__name__}")
            undo.append(_swap(module, name, value))
        yield
    finally:
        for step in reversed(undo):
            _restore(*step)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict name -> Tensor, or a sequence of dicts with distinct keys) in place of the
    module's parameters and buffers of those names; the rest stay the module's own
    (``strict=True``: every parameter and buffer must be given, and no other name)."""
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: module must be a fastnn.nn.Module, got "
                        f"{type(module).__name__}")
    tensors = _merged(parameter_and_buffer_dicts)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrized(module, tensors, tie_weights, strict):
        return module(*args, **({} if kwargs is None else kwargs))


def _stacked_leaf(tensors: tuple, name: str) -> Tensor:
    requiring = [t.requires_grad for t in tensors]
    if any(requiring) and not all(requiring):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if all(requiring) else result


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): the parameters and buffers of ``models`` (modules of one class,
    in one training/eval mode) stacked along a new first dimension, by name, for
    ensembling with ``vmap(..., in_dims=(0, 0, None))``. Stacked parameters are new
    leaves (requiring grad where the models' do), unrelated to the models' own."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same "
                           "class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


__all__ = ["functional_call", "stack_module_state"]
