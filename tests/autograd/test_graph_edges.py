"""grad_fn.next_functions as PyTorch's: the edges graph walkers (torchviz) follow."""

from __future__ import annotations

import pytest

import fastnn as fnn


def _walk(fn, seen=None):
    """Names of every node reachable from ``fn``, depth first (leaves as 'leaf:<shape>')."""
    seen = [] if seen is None else seen
    if fn is None:
        return seen
    if hasattr(fn, "variable"):
        seen.append(f"leaf:{tuple(fn.variable.shape)}")
        return seen
    seen.append(fn.name())
    for child, index in fn.next_functions:
        assert index == 0
        _walk(child, seen)
    return seen


def test_edges_reach_the_leaves():
    x = fnn.tensor([[1.0, 2.0]], requires_grad=True)
    w = fnn.tensor([[1.0], [3.0]], requires_grad=True)
    y = ((x * 2).exp() @ w).sum()
    assert _walk(y.grad_fn) == ["SumBackward0", "MmBackward0", "ExpBackward0",
                                "MulBackward0", "leaf:(1, 2)", "leaf:(2, 1)"]
    mul = y.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    assert mul.next_functions[0][0].variable is x
    assert mul.next_functions[1] == (None, 0)  # the constant 2
    assert repr(y.grad_fn).startswith("<SumBackward0 object at 0x")


def test_like_pytorch():
    torch = pytest.importorskip("torch")

    def build(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([3.0, 4.0])
        return ((x * c).exp() + x).sum()

    def shape(fn):
        if fn is None:
            return None
        if hasattr(fn, "variable"):
            return "leaf"
        return [shape(child) for child, _ in fn.next_functions]

    assert shape(build(fnn).grad_fn) == shape(build(torch).grad_fn)
