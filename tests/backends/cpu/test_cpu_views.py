"""fastnn_cpu.views.reshaped_view: a view or an error, never a copy, on every NumPy the
backend supports, and no array in the backend reshaped by assigning ``.shape`` (deprecated
from NumPy 2.5)."""

from __future__ import annotations

import ast
import pathlib

import fastnn_cpu
import numpy as np
import pytest
from fastnn_cpu import views

BRANCHES = [views._assign_shape]
if np.lib.NumpyVersion(np.__version__) >= "2.1.0":
    BRANCHES.append(views._reshape_no_copy)


@pytest.mark.parametrize("reshape", BRANCHES, ids=lambda f: f.__name__)
def test_a_view_or_an_error(reshape):
    a = np.arange(24.0).reshape(4, 6)
    view = reshape(a[1:3], (2, 2, 3))
    assert np.shares_memory(view, a)
    np.testing.assert_array_equal(view, a[1:3].reshape(2, 2, 3))  # the values, another way
    with pytest.raises((ValueError, AttributeError)):
        reshape(a[:, :3], (12,))  # rows with gaps between them: only a copy is (12,)


def test_no_array_shape_is_assigned_in_the_backend():
    """``x.shape = ...`` outside views.py's fallback for NumPy < 2.1."""
    root = pathlib.Path(fastnn_cpu.__file__).parent
    found = []
    for path in sorted(root.glob("*.py")):
        if path.name == "views.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            found += [f"{path.name}:{node.lineno}" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr == "shape"]
    assert not found, f"assigns .shape (use fastnn_cpu.views.reshaped_view): {found}"
