"""fastnn.api.xp_hooks: the one table of one-call hooks that cpu, cuda and the minimal
backend share."""

import inspect

import numpy as np
import pytest

from fastnn.api import hookspec
from fastnn.api.xp_hooks import BINARY, SHAPED, UNARY, xp_hooks

NAMES = sorted(UNARY) + sorted(BINARY) + sorted(SHAPED)


def test_every_entry_is_a_hook_with_the_specs_arguments():
    hooks = xp_hooks(np, NAMES)
    for name in NAMES:
        assert name in hookspec.HOOKS, name
        spec = list(inspect.signature(getattr(hookspec, name)).parameters)
        assert list(inspect.signature(hooks[name]).parameters) == spec, name


def test_the_hooks_compute_what_numpy_computes():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    hooks = xp_hooks(np, NAMES)
    for name, fn in UNARY.items():
        np.testing.assert_array_equal(hooks[name](a), getattr(np, fn)(a))
    for name in ("add", "sub", "mul", "div", "maximum", "less"):
        np.testing.assert_array_equal(hooks[name](a, b), getattr(np, BINARY[name])(a, b))
    np.testing.assert_array_equal(hooks["matmul"](a, b.T), a @ b.T)
    assert hooks["transpose"](a, (1, 0)).shape == (4, 3)
    assert hooks["broadcast_to"](a[:1], (5, 4)).shape == (5, 4)


def test_a_late_module_is_looked_up_at_each_call():
    class Counting:
        calls = 0

        @staticmethod
        def add(a, b):
            Counting.calls += 1
            return np.add(a, b)

    current = {"xp": np}
    add = xp_hooks(lambda: current["xp"], ["add"])["add"]
    assert add(1, 2) == 3
    current["xp"] = Counting
    assert add(1, 2) == 3 and Counting.calls == 1


def test_an_unknown_name_is_refused():
    with pytest.raises(KeyError, match="'log_softmax' is not a one-call hook"):
        xp_hooks(np, ["log_softmax"])
