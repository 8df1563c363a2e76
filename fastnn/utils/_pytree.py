"""PyTorch's ``torch.utils._pytree``: nested containers (pytrees) taken apart into their
leaves and a :class:`TreeSpec`, and put back together.

The containers are PyTorch's: list, tuple, dict (keys in insertion order), namedtuple,
OrderedDict, defaultdict and deque, and any type given to :func:`register_pytree_node`;
everything else is a leaf, None included. A spec prints as PyTorch's.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["LeafSpec", "TreeSpec", "is_namedtuple", "register_pytree_node", "tree_all",
           "tree_all_only", "tree_any", "tree_any_only", "tree_flatten", "tree_is_leaf",
           "tree_iter", "tree_leaves", "tree_map", "tree_map_", "tree_map_only",
           "tree_map_only_", "tree_structure", "tree_unflatten"]


@dataclasses.dataclass(frozen=True)
class _Node:
    flatten: Callable  # node -> (children, context)
    unflatten: Callable  # (children, context) -> node


def _namedtuple_flatten(t):
    return list(t), type(t)


_NODES: dict[type, _Node] = {
    list: _Node(lambda x: (list(x), None), lambda c, _: list(c)),
    tuple: _Node(lambda x: (list(x), None), lambda c, _: tuple(c)),
    dict: _Node(lambda x: (list(x.values()), list(x)), lambda c, keys: dict(zip(keys, c))),
    collections.OrderedDict: _Node(lambda x: (list(x.values()), list(x)),
                                   lambda c, keys: collections.OrderedDict(zip(keys, c))),
    collections.defaultdict: _Node(
        lambda x: (list(x.values()), [x.default_factory, list(x)]),
        lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c))),
    collections.deque: _Node(lambda x: (list(x), x.maxlen),
                             lambda c, maxlen: collections.deque(c, maxlen=maxlen)),
}
_NAMEDTUPLE = _Node(_namedtuple_flatten, lambda c, cls: cls(*c))


def is_namedtuple(obj) -> bool:
    """Whether ``obj`` (an instance or a class) is a namedtuple."""
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _node_of(tree):
    kind = type(tree)
    found = _NODES.get(kind)
    if found is None and is_namedtuple(kind):
        return "namedtuple", _NAMEDTUPLE
    return kind, found


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)``,
    ``unflatten_fn(children, context) -> obj``."""
    if cls in _NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    _NODES[cls] = _Node(flatten_fn, unflatten_fn)


class TreeSpec:
    """The shape of a pytree without its leaves: the container's type, its context (a
    dict's keys, a namedtuple's class, ...) and the specs of its children."""

    def __init__(self, type, context, children_specs):
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = sum(spec.num_leaves for spec in self.children_specs)
        self.num_nodes = 1 + sum(spec.num_nodes for spec in self.children_specs)

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and not other.is_leaf() and
                (self.type, self.context, self.children_specs) ==
                (other.type, other.context, other.children_specs))

    def __hash__(self):
        return hash((str(self.type), self.num_nodes))

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __repr__(self, indent: int = 0) -> str:
        """PyTorch's: the first child on the opening line, each next one on a line of its
        own, two spaces deeper a level."""
        name = self.type if isinstance(self.type, str) else self.type.__name__
        inner = indent + 2
        body = (",\n" + " " * inner).join(spec.__repr__(inner) for spec in self.children_specs)
        return f"TreeSpec({name}, {self.context}, [{body}])"


class LeafSpec(TreeSpec):
    """The spec of one leaf (printed ``*``)."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return 0

    def __repr__(self, indent: int = 0) -> str:
        return "*"


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf: ``is_leaf(tree)`` says so, or it is no container."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_of(tree)[1] is None


def tree_flatten(tree, is_leaf=None) -> tuple[list, TreeSpec]:
    """(the leaves in order, the spec that :func:`tree_unflatten` rebuilds from)."""
    leaves: list = []

    def walk(node):
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return LeafSpec()
        kind, handler = _node_of(node)
        children, context = handler.flatten(node)
        return TreeSpec(kind, context, [walk(child) for child in children])

    return leaves, walk(tree)


def tree_unflatten(leaves, treespec: TreeSpec):
    """The pytree of ``treespec`` with ``leaves`` in its places."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be "
                        f"instance of TreeSpec but got item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} "
                         f"items ({treespec}).")
    it = iter(leaves)

    def build(spec):
        if spec.is_leaf():
            return next(it)
        children = [build(child) for child in spec.children_specs]
        handler = _NAMEDTUPLE if spec.type == "namedtuple" else _NODES[spec.type]
        return handler.unflatten(children, spec.context)

    return build(treespec)


def tree_iter(tree, is_leaf=None):
    """The leaves, one by one."""
    return iter(tree_flatten(tree, is_leaf)[0])


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves, in order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    """The spec of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """``tree`` with each leaf ``x`` replaced by ``func(x, *the same leaf of each rest)``;
    the rests must have ``tree``'s structure (at least: a leaf of ``tree`` may stand over a
    subtree of a rest, which ``func`` then gets whole)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, rest) for rest in rests]
    return tree_unflatten([func(*args) for args in zip(leaves, *others)], spec)


def _flatten_up_to(spec: TreeSpec, tree) -> list:
    """The parts of ``tree`` where ``spec`` has its leaves."""
    if spec.is_leaf():
        return [tree]
    kind, handler = _node_of(tree)
    if handler is None or kind != spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = handler.flatten(tree)
    if len(children) != spec.num_children or (kind in (dict, collections.OrderedDict)
                                              and context != spec.context):
        raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                         f"{len(children)}.")
    return [part for sub, child in zip(spec.children_specs, children)
            for part in _flatten_up_to(sub, child)]


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call ``func`` on each leaf (and the rests' matching leaves) for its effect; returns
    ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, rest) for rest in rests]
    for args in zip(leaves, *others):
        func(*args)
    return tree


def _only(type_or_types, func):
    def apply(x):
        return func(x) if isinstance(x, type_or_types) else x

    return apply


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """:func:`tree_map` of ``func`` on the leaves of the given type(s); others stay."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func, tree, is_leaf=None):
    """:func:`tree_map_` of ``func`` on the leaves of the given type(s)."""
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


PyTree = Any
