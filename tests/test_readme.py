"""The README's Python examples run as written: after set-up command 1 alone (the core
and the cpu backend), every block but those marked ``<!-- needs: BACKEND -->``, which
run where that backend is available."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fastnn as fnn

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# a ```python block, and the backend named by a <!-- needs: NAME --> line right above it
BLOCK = re.compile(r"(?:<!-- needs: (\w+) -->\n)?```python\n(.*?)```", flags=re.S)


def blocks() -> list:
    """``(needed backend or None, code)`` for each Python block of the README, in order."""
    return BLOCK.findall(README.read_text())


def test_only_marked_blocks_need_another_backend():
    """Command 1 installs the cpu backend alone: an unmarked block that names another
    would fail for a reader who ran only command 1."""
    found = blocks()
    assert len(found) >= 2
    for needs, code in found:
        if not needs:
            assert not re.search(r"\b(opencl|cuda)\b", code), code


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    available = {b.name for b in fnn.backends() if b.available}
    monkeypatch.chdir(tmp_path)
    namespace, skipped = {}, []
    for needs, code in blocks():
        if needs and needs not in available:
            skipped.append(needs)
            continue
        exec(compile(code, str(README), "exec"), namespace)
    assert (tmp_path / "ckpt.safetensors").exists()
    assert namespace["x"].grad.shape == (8, 3)
    if "opencl" in available:
        assert namespace["z"].device == "opencl"
    else:
        assert skipped == ["opencl"]


def test_a_run_without_torch_ends_by_saying_what_it_skipped(tmp_path):
    """The README's test command skipped ~390 PyTorch comparisons without a word."""
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_compares_with_torch():\n"
        "    pytest.skip(\"could not import 'torch': No module named 'torch'\")\n"
        "def test_slow():\n"
        "    pytest.skip('slow: run with --runslow')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c",
                           os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    last = done.stdout.strip().splitlines()[-2:]
    assert any("1 PyTorch cross-check skipped" in line and "pip install torch==2.13.0" in line
               for line in last), done.stdout


def test_the_torch_in_the_note_is_the_one_ci_installs():
    from tests.conftest import TORCH

    assert f'"{TORCH}"' in (ROOT / ".ci" / "run").read_text()
    assert f"pip install {TORCH}" in README.read_text()
