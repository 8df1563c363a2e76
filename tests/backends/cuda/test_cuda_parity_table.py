"""backends/cuda_cupy/README.md's table of the optional hooks lists every one of them, and
its cuda column says what the cuda backend really implements."""

from __future__ import annotations

import re
from pathlib import Path

import fastnn_cuda

from fastnn.api import hookspec, registry

README = Path(__file__).resolve().parents[3] / "backends" / "cuda_cupy" / "README.md"


def _table() -> dict:
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (\w+) \| (\w+) \|", README.read_text(), re.M)
    return {name: dict(cpu=cpu, opencl=ocl, cuda=cuda) for name, cpu, ocl, cuda in rows}


def _implemented(module) -> set:
    names = set()
    for sub in registry.hook_modules(module):
        for name, value in vars(sub).items():
            fn = getattr(value, "__wrapped__", value)
            if name in hookspec.HOOKS and hasattr(fn, "fastnn_impl"):
                names.add(name)
    return names


def test_the_table_lists_every_optional_hook_once():
    table = _table()
    assert list(table) == list(hookspec.OPS)


def test_the_cuda_column_matches_the_backend():
    native = _implemented(fastnn_cuda)
    table = _table()
    wrong = {n for n, row in table.items() if (row["cuda"] == "native") != (n in native)}
    assert not wrong, f"README's cuda column is wrong for {sorted(wrong)}"
    assert {row["cuda"] for row in table.values()} <= {"native", "composite"}
