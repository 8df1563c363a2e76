"""Ctrl-C during ``fastnn train``: exit 130, a note, and the old checkpoint untouched."""

import os
import signal
import subprocess
import sys
import time
from importlib.util import find_spec

import pytest

import fastnn as fnn

MAIN = "import sys; from fastnn.cli import main; sys.exit(main())"


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
@pytest.mark.skipif(find_spec("sklearn") is None or find_spec("safetensors") is None,
                    reason="needs scikit-learn and safetensors: pip install -e '.[examples]'")
def test_ctrl_c_leaves_the_previous_checkpoint_intact(tmp_path):
    path = tmp_path / "model.safetensors"
    train = [sys.executable, "-c", MAIN, "train", "--checkpoint", str(path)]
    subprocess.run([*train, "--epochs", "1"], check=True, capture_output=True)
    before = path.read_bytes()

    proc = subprocess.Popen([*train, "--epochs", "100000"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while not line.split()[1:2] == ["2/100000"]:  # mid-training, past the first epoch
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "training did not start"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "interrupted in epoch" in out and "was not written" in out
    assert path.read_bytes() == before  # not overwritten, not truncated
    assert fnn.load(path)["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]  # no temp files
