"""fastnn.utils._pytree (PyTorch's torch.utils._pytree): leaves, specs, rebuilding,
mapping over several trees, errors; against hand-written expectations, and against
PyTorch's on the same trees where it is installed."""

import collections

import pytest

from fastnn.utils import _pytree as pytree

NT = collections.namedtuple("NT", "p q")


def _tree():
    return {"b": [1, (2, None)], "a": collections.OrderedDict(z=3, y=[4]), "n": NT(5, {"k": 6}),
            "d": collections.deque([7, 8], maxlen=5), "dd": collections.defaultdict(list, {1: 9})}


def test_leaves_in_order_none_a_leaf_and_the_tree_rebuilt():
    leaves, spec = pytree.tree_flatten(_tree())
    assert leaves == [1, 2, None, 3, 4, 5, 6, 7, 8, 9]
    assert spec.num_leaves == 10 and spec.num_nodes == 19  # (9 containers, 10 leaves)
    rebuilt = pytree.tree_unflatten([x if x is None else -x for x in leaves], spec)
    assert rebuilt["b"] == [-1, (-2, None)] and type(rebuilt["n"]) is NT
    assert rebuilt["n"] == NT(-5, {"k": -6}) and rebuilt["d"].maxlen == 5
    assert rebuilt["dd"].default_factory is list and rebuilt["dd"][1] == -9
    assert list(rebuilt) == ["b", "a", "n", "d", "dd"]  # (insertion order, not sorted)


def test_map_over_several_trees_and_its_errors():
    out = pytree.tree_map(lambda a, b: (a, b), [1, (2,)], [[10, 11], (20,)])
    assert out == [(1, [10, 11]), ((2, 20),)]  # a leaf over a subtree gets it whole
    with pytest.raises(ValueError, match="Node type mismatch"):
        pytree.tree_map(lambda a, b: a, [1, (2,)], [10, [20]])
    with pytest.raises(ValueError, match="Node arity mismatch"):
        pytree.tree_map(lambda a, b: a, [1, (2,)], [10])
    with pytest.raises(ValueError, match="holds 2 items"):
        pytree.tree_unflatten([1], pytree.tree_structure([1, 2]))


def test_only_is_leaf_any_all_and_a_registered_node():
    assert pytree.tree_map_only(int, lambda x: x + 1, [1, "s", 2.0]) == [2, "s", 2.0]
    assert pytree.tree_leaves([1, [2]], is_leaf=lambda x: x == [2]) == [1, [2]]
    assert pytree.tree_all(lambda x: x > 0, [1, (2,)]) and not pytree.tree_any(
        lambda x: x > 2, [1, (2,)])
    assert pytree.tree_structure([1, 2]) == pytree.tree_structure([3, 4])
    assert pytree.tree_structure([1, 2]) != pytree.tree_structure([3, [4]])

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None),
                                lambda children, _: Pair(*children))
    try:
        doubled = pytree.tree_map(lambda x: 2 * x, {"p": Pair(1, [2])})
        assert (doubled["p"].a, doubled["p"].b) == (2, [4])
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, _: Pair(0, 0))
    finally:
        del pytree._NODES[Pair]


def test_as_pytorchs():
    theirs = pytest.importorskip("torch.utils._pytree")
    for tree in (_tree(), [1, [2, [3, []]], ()], None, 5, (), {}, [NT(1, 2)]):
        their_leaves, their_spec = theirs.tree_flatten(tree)
        our_leaves, our_spec = pytree.tree_flatten(tree)
        assert our_leaves == their_leaves
        assert repr(our_spec) == repr(their_spec)
        assert (our_spec.num_leaves, our_spec.num_nodes) == (their_spec.num_leaves,
                                                              their_spec.num_nodes)
        marks = [object() for _ in our_leaves]
        assert repr(pytree.tree_unflatten(marks, our_spec)) == repr(
            theirs.tree_unflatten(marks, their_spec))
