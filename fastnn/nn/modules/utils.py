"""``torch.nn.modules.utils``' argument helpers, which custom layers import: ``_pair(3)``
is ``(3, 3)``, ``_pair((1, 2))`` is ``(1, 2)``."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat


def _ntuple(n: int, name: str = "parse"):
    """A function making ``n``-tuples: an iterable as a tuple of its items, anything else
    repeated ``n`` times."""
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Each item of ``t``, last first, repeated ``n`` times (F.pad's order of a conv's
    padding)."""
    return tuple(x for x in reversed(t) for _ in range(n))
