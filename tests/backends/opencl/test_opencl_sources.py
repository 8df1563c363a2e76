"""Kernel sources: ``#include "x.cl"`` lines expanded by the runtime, every file short.

The OpenCL compiler never sees an include: :func:`runtime.source` inlines the file's text,
so the program string (and PoCL's cache key) changes with every included file.
"""

from importlib import resources

import pytest
from fastnn_opencl import runtime

KERNELS = resources.files("fastnn_opencl") / "kernels"


def _cl_files():
    return sorted(p.name for p in KERNELS.iterdir() if p.name.endswith(".cl"))


@pytest.mark.parametrize("name", _cl_files())
def test_every_kernel_file_is_under_400_lines(name):
    assert len((KERNELS / name).read_text().splitlines()) < 400


@pytest.mark.parametrize("name", _cl_files())
def test_sources_expand_every_include(name):
    text = runtime.source(name)
    assert '#include "' not in text
    assert text.startswith((KERNELS / "common.cl").read_text())


def test_an_included_file_lands_where_its_line_was():
    text = runtime.source("matmul.cl")
    packed = (KERNELS / "matmul_packed.cl").read_text()
    im2col = (KERNELS / "matmul_im2col.cl").read_text()
    assert packed in text and im2col in text
    assert text.index("#ifdef KC") < text.index(packed) < text.index(im2col)
    assert text.index(im2col) < text.index("#ifdef TN")
    assert "__kernel void k_gru_seq(" in runtime.source("recurrent.cl")


def test_a_file_is_included_once(monkeypatch, tmp_path):
    for name, text in {"common.cl": "", "a.cl": '#include "b.cl"\n#include "b.cl"\nA\n',
                       "b.cl": '#include "a.cl"\nB\n'}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(runtime, "_KERNEL_DIR", tmp_path)
    monkeypatch.setattr(runtime, "_sources", {})
    text = runtime.source("a.cl")
    assert text.count("\nB\n") == 1 and text.count("A\n") == 1
    assert "// b.cl: already included" in text and "// a.cl: already included" in text
