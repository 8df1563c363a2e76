"""The arrays a batch of pending device calls needs read (``_read_batch``'s list): collect.c
against its Python version ``batch._collect``, on batches with every kind of call (lists
of arrays, an in-place call read before it ran, a to_numpy, a write with no result, tuple
outputs, missing optional arrays, arrays of two backends, cached host copies), and a bad
batch refused with an exception, never a crash."""

from __future__ import annotations

import numpy as np
import pytest

from fastnn.shadowing import batch, calls, diff


class Array:
    """A device array as shadow mode sees one: anything with a ``shape``."""

    __slots__ = ("shape", "name")

    def __init__(self, name):
        self.shape, self.name = (2,), name

    def __repr__(self):
        return self.name


class Entry:
    """A pending call's fields that the collection reads."""

    def __init__(self, hook, args, out=None, host=None, originals=None):
        self.spec, self.args, self.out, self.host = calls.SPECS[hook], tuple(args), out, host
        self.originals = ONE if originals is None else originals


ONE, TWO = {"table": 1}, {"table": 2}  # two backends' hook tables


def _batch():
    a, b, c, d = (Array(n) for n in "abcd")
    params, grads = [Array(f"p{i}") for i in range(3)], [Array(f"g{i}") for i in range(3)]
    moments = [[Array(f"m{i}") for i in range(3)], [Array(f"v{i}") for i in range(3)]]
    out = Array("out")
    second = Array("on two")
    pending = [
        Entry("add", (a, b), out),
        Entry("add", (out, a), Array("again")),  # a read once
        Entry("where", (c, None, d), Array("w")),  # (a missing array is skipped)
        Entry("adam_step", (params, grads, *moments, [1e-3] * 3, [0.0] * 3, 0.9, 0.999, 1e-8,
                            [1] * 3, False), (params, *moments)),
        Entry("adam_step", (params, grads, *moments, [1e-3] * 3, [0.0] * 3, 0.9, 0.999, 1e-8,
                            [1] * 3, False), (params, *moments), host=["read before"]),
        Entry("to_numpy", (b,), np.zeros(2)),  # (its output is on the host)
        Entry("assign", (d, c)),  # (no result: its first argument is what it made)
        Entry("bias_act_backward", (a, b, c, d, "relu", False), (Array("gx"), Array("gb"))),
        Entry("add", (second, second), Array("two's"), originals=TWO),
    ]
    cached = {id(b): np.ones(2), id(params[0]): np.ones(2)}
    extra = (ONE, [params[1], Array("extra")])
    return pending, cached, extra


def _named(found):
    fetched, groups, held = found
    return (sorted((k, v is None) for k, v in fetched.items()),
            [(originals["table"], [repr(a) for a in arrays]) for originals, arrays in groups],
            [[repr(a) for a in arrays] for arrays in held])


def test_collect_c_matches_python():
    collect = diff.bulk_function(collect=True)
    if collect is None:
        pytest.skip(f"no C batch functions here: {diff._bulk[1]}")
    for extra in (None, "extra"):
        pending, cached, more = _batch()
        more = more if extra else None
        want = batch._collect(pending, cached, more)
        assert _named(collect(pending, cached, more)) == _named(want)
    # what is read: each array once, the cached ones not, two's in its own group
    groups = _named(want)[1]
    assert [table for table, _ in groups] == [1, 2] and groups[1][1] == ["on two", "two's"]
    assert "b" not in groups[0][1] and "p0" not in groups[0][1]
    assert groups[0][1].count("a") == 1 and "read before" not in groups[0][1]
    assert groups[0][1][-1] == "extra"


@pytest.mark.parametrize("bad", ["not a list", "args not a tuple", "extra not a pair"])
def test_collect_refuses_a_bad_batch(bad):
    collect = diff.bulk_function(collect=True)
    if collect is None:
        pytest.skip(f"no C batch functions here: {diff._bulk[1]}")
    pending, cached, extra = _batch()
    if bad == "not a list":
        pending = tuple(pending)
    elif bad == "args not a tuple":
        pending[0].args = Array("x")
    else:
        extra = [ONE]
    with pytest.raises(TypeError):
        collect(pending, cached, extra)
