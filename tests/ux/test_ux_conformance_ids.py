"""``fastnn conformance -v``: the printed test ids name files that exist."""

import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # (8-17 s of the README's 2-core run; CI runs it with --runslow)
def test_verbose_ids_name_real_files(tmp_path):
    argv = [sys.executable, "-m", "fastnn.cli", "conformance", "--backend", "cpu",
            "-k", "test_forward and exp", "-v", "--report", "-", "--against", "none"]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    files = set(re.findall(r"^(\S+\.py)::", run.stdout, flags=re.M))
    assert files, run.stdout
    for name in files:  # e.g. ../fastnn/conformance/test_forward.py, relative to the cwd
        assert (tmp_path / name).resolve().is_file(), f"{name} does not exist"
        assert Path(name).parent.name == "conformance"
