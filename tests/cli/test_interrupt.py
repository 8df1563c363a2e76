"""Ctrl-C during ``fastnn train``: exit 130, one note, and a checkpoint of the finished epochs
(each saved atomically, so an interrupted save leaves the previous one)."""

import os
import re
import signal
import subprocess
import sys
import time
from importlib.util import find_spec

import pytest

import fastnn as fnn

MAIN = "import sys; from fastnn.cli import main; sys.exit(main())"
pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="sends SIGINT"),
    pytest.mark.skipif(find_spec("sklearn") is None or find_spec("safetensors") is None,
                       reason="needs scikit-learn and safetensors: pip install -e '.[examples]'"),
]


def interrupt_training(*options, after_epoch: int):
    """Run ``fastnn train --epochs 100000 OPTIONS``, send SIGINT once the line of
    ``after_epoch`` is out; return (exit status, stdout, stderr)."""
    argv = [sys.executable, "-c", MAIN, "train", "--epochs", "100000", *options]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while not line.split()[1:2] == [f"{after_epoch}/100000"]:
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "training did not start"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out, err


def test_ctrl_c_keeps_the_finished_epochs_and_says_so_once(tmp_path):
    path = tmp_path / "model.safetensors"
    code, out, err = interrupt_training("--checkpoint", str(path), after_epoch=3)
    assert code == 130
    assert (out + err).count("interrupted") == 1  # one note, on stderr
    note = re.search(r"interrupted in epoch (\d+); (\S+) holds the first (\d+) epochs "
                     r"\(continue with --resume\)", err)
    assert note and note.group(2) == str(path), err
    saved = int(note.group(3))
    assert saved >= 3 and int(note.group(1)) in (saved, saved + 1)
    state = fnn.load(path)
    assert int(state["epoch"]) == saved and len(state["history"]["test_acc"]) == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]  # no temp files


def test_ctrl_c_without_a_checkpoint_says_nothing_was_kept():
    code, out, err = interrupt_training(after_epoch=1)
    assert code == 130 and (out + err).count("interrupted") == 1
    assert "nothing saved (--checkpoint PATH keeps epochs)" in err


def test_ctrl_c_inside_a_held_block_is_raised_when_it_ends():
    """The checkpoint's write and the count of epochs it holds (``fastnn train``'s
    note) are one step: a SIGINT in between is held, then raised, and the previous
    handler is back afterwards."""
    from fastnn.cli.train_resume import held_interrupt

    done = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with held_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # (the handler runs between bytecodes: give it some)
                sum(range(10))
            done.append("after the signal")
    assert done == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is before
    with held_interrupt():  # no signal: nothing raised
        done.append("quiet")
    assert done[-1] == "quiet"
