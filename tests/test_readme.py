"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

import fastnn as fnn

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    opencl = {b.name: b for b in fnn.backends()}.get("opencl")
    if opencl is None or not opencl.available:
        pytest.skip("the tour uses the opencl backend")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert (tmp_path / "ckpt.safetensors").exists()
    assert namespace["x"].grad.shape == (8, 3) and namespace["z"].device == "opencl"
