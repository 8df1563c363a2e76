"""``fastnn.compiler`` (torch.compiler's names model code calls): is_compiling is True
while fnn.compile records, and the steering decorators leave functions unchanged."""

from __future__ import annotations

import numpy as np

import fastnn as fnn


def test_is_compiling_and_decorators():
    assert fnn.compiler.is_compiling() is False and fnn.compiler.is_exporting() is False

    @fnn.compiler.disable
    def double(x):
        return x * 2

    @fnn.compiler.disable(recursive=False)
    def plus_one(x):
        return x + 1

    assert fnn.compiler.allow_in_graph(double) is double
    seen = []

    def step(x):
        seen.append(fnn.compiler.is_compiling())
        return plus_one(double(x))

    compiled = fnn.compile(step)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(fnn.ones(2)).numpy(), [3.0, 3.0])
    assert seen[0] is True  # the first call records the step
    assert fnn.compiler.compile is fnn.compile and fnn.compiler.list_backends() == ["fastnn"]
    assert fnn.compiler.reset() is None
