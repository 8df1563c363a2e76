"""The nested containers the transforms of :mod:`fastnn.func` map over, as PyTorch's pytrees.

A tree is a tuple, list, dict or namedtuple of trees, or None (a node without leaves), or
a leaf (anything else: a Tensor, a number). ``flatten`` gives its leaves in order and a
spec that ``unflatten`` rebuilds the same structure from; ``broadcast`` spreads a prefix
tree (``in_dims``, ``out_dims``) over a spec, a leaf of the prefix standing for the whole
subtree below it.
"""

from __future__ import annotations

LEAF = "*"  # the spec of a leaf


def _node(tree):
    """(kind, context, children) of a container; None for a leaf."""
    if tree is None:
        return "none", None, ()
    if isinstance(tree, tuple):
        kind = type(tree) if hasattr(tree, "_fields") else tuple  # a namedtuple keeps its type
        return kind, None, tuple(tree)
    if isinstance(tree, list):
        return list, None, tuple(tree)
    if isinstance(tree, dict):
        return dict, tuple(tree), tuple(tree.values())
    return None


def flatten(tree) -> tuple[list, object]:
    """(the leaves of ``tree`` in order, its spec)."""
    leaves: list = []

    def walk(sub):
        node = _node(sub)
        if node is None:
            leaves.append(sub)
            return LEAF
        kind, context, children = node
        return kind, context, tuple(walk(child) for child in children)

    spec = walk(tree)
    return leaves, spec


def unflatten(leaves, spec):
    """The tree of ``spec`` with ``leaves`` (in flatten's order) at its leaves."""
    items = iter(leaves)

    def build(sub):
        if sub == LEAF:
            return next(items)
        kind, context, children = sub
        values = [build(child) for child in children]
        if kind == "none":
            return None
        if kind is dict:
            return dict(zip(context, values))
        if kind is list:
            return values
        return tuple(values) if kind is tuple else kind(*values)

    return build(spec)


def num_leaves(spec) -> int:
    if spec == LEAF:
        return 1
    return sum(num_leaves(child) for child in spec[2])


def broadcast(prefix, spec) -> list | None:
    """One value of ``prefix`` per leaf of ``spec`` (a leaf or None of the prefix covers
    its whole subtree); None where the prefix's structure does not match the spec's."""
    node = None if prefix is None else _node(prefix)
    if node is None:
        return [prefix] * num_leaves(spec)
    if spec == LEAF:
        return None
    kind, context, children = node
    spec_kind, spec_context, spec_children = spec
    if kind is not spec_kind and not (kind is tuple and isinstance(spec_kind, type)
                                      and issubclass(spec_kind, tuple)):
        return None
    if kind is dict:
        if set(context) != set(spec_context):
            return None
        children = tuple(prefix[key] for key in spec_context)
    if len(children) != len(spec_children):
        return None
    result: list = []
    for child, child_spec in zip(children, spec_children):
        part = broadcast(child, child_spec)
        if part is None:
            return None
        result += part
    return result


def describe(spec) -> str:
    """The structure of ``spec`` in words (for error messages): ``(*, [*, *], {'a': *})``."""
    if spec == LEAF:
        return LEAF
    kind, context, children = spec
    inner = [describe(child) for child in children]
    if kind == "none":
        return "None"
    if kind is dict:
        return "{" + ", ".join(f"{key!r}: {part}" for key, part in zip(context, inner)) + "}"
    if kind is list:
        return "[" + ", ".join(inner) + "]"
    name = "" if kind is tuple else kind.__name__
    return f"{name}(" + ", ".join(inner) + ("," if len(inner) == 1 and not name else "") + ")"
