"""The ``fastnn`` command itself (fastnn/cli/__init__.py): --version, the top-level help,
argument types shared by the subcommands, and a reader that closes the pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import fastnn as fnn
from fastnn.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"fastnn {fnn.__version__}"


def test_help_says_what_the_command_does(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "train a model on a real data set" in out
    assert "module" not in out  # the package's layout is for the source, not for users
    assert "fastnn conformance --backend" in out  # examples


@pytest.mark.parametrize("argv, message", [
    (["train", "--seed", "-1"], "argument --seed: must be an integer >= 0, got -1"),
    (["train", "--seed", "x"], "argument --seed: expected an integer >= 0, got 'x'"),
    (["train", "--threads", "-2"], "argument --threads: must be an integer >= 0, got -2"),
    (["bench", "--threads", "0"], "argument --threads: must be an integer >= 1, got 0"),
])
def test_out_of_range_integers_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_threads_help_warns_about_a_busy_machine(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "busy machine" in " ".join(capsys.readouterr().out.split())


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    def write_to_a_closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("fastnn.cli.info.run", write_to_a_closed_pipe)
    assert main(["info"]) == 1
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(find_spec("sklearn") is None, reason="digits need scikit-learn: "
                    "pip install -e '.[examples]'")
def test_train_into_head_ends_without_a_traceback():
    """`fastnn train | head -1`: the reader goes away after the first line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, "-m", "fastnn.cli", "train", "--epochs", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    assert proc.stdout.readline().startswith(b"training mlp on digits")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
