"""``fastnn train`` in a real 80-column terminal (tmux): clean redraws, one note on Ctrl-C,
and a checkpoint of every finished epoch."""

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from importlib.util import find_spec

import pytest

import fastnn as fnn
from fastnn.cli import main

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None,
                       reason="needs tmux (apt-get install tmux) for a real terminal"),
    pytest.mark.skipif(os.name != "posix", reason="tmux runs on POSIX systems"),
    pytest.mark.skipif(find_spec("sklearn") is None or find_spec("safetensors") is None,
                       reason="needs scikit-learn and safetensors: pip install -e '.[examples]'"),
]

COLUMNS, ROWS = 80, 24
MAIN = "import sys; from fastnn.cli import main; sys.exit(main())"
NUMBER = r"[\d,]+"
# every row the terminal may show: a complete line of one kind, nothing cut off or left over
ROW_KINDS = {
    "bar": rf"\[[#.]+\] epoch +\d+/\d+  loss \d+\.\d{{4}}  acc +\d+\.\d\d%  +{NUMBER} samples/s",
    "epoch": rf"epoch +\d+/\d+  loss \d+\.\d{{4}}  acc +\d+\.\d\d%  +{NUMBER} samples/s"
             r"  held-out acc +\d+\.\d\d%",
    "header": r"training mlp on digits \(\d+ train, \d+ held out\) on cpu",
    "settings": r"  adam lr 0\.001, batch \d+, tape, seed 0",
}


def row_kind(row: str) -> str | None:
    return next((kind for kind, pattern in ROW_KINDS.items() if re.fullmatch(pattern, row)),
                None)


class Terminal:
    """A detached tmux session of COLUMNS x ROWS on a private server."""

    def __init__(self, command: str):
        self.socket = f"fastnn-test-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-x", str(COLUMNS), "-y", str(ROWS), "-s", "t", command)

    def tmux(self, *args) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=30, check=True)
        return done.stdout

    def screen(self, history: bool = False, join: bool = False) -> list[str]:
        """The rows shown (``history``: since the start); ``join``: wrapped rows joined."""
        extra = (["-S", "-"] if history else []) + (["-J"] if join else [])
        return [row.rstrip() for row in self.tmux("capture-pane", "-p", *extra).splitlines()]

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def wait_for(predicate, seconds: float, what: str, term: Terminal):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    screen = "\n".join(term.screen())
    raise AssertionError(f"timed out after {seconds} s waiting for {what}; the screen:\n{screen}")


def finished_epochs(rows: list[str]) -> list[int]:
    return [int(re.match(r"epoch +(\d+)/", row).group(1)) for row in rows
            if row_kind(row) == "epoch"]


@pytest.mark.slow  # (8-17 s of the README's 2-core run; CI runs it with --runslow)
def test_train_in_80_columns_then_ctrl_c(tmp_path):
    checkpoint, rc_file = tmp_path / "run.safetensors", tmp_path / "rc"
    env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in ("PATH", "PYTHONPATH")
                   if k in os.environ)
    # small batches: several redraws of the bar per epoch
    train = [sys.executable, "-c", MAIN, "train", "--epochs", "500", "--batch-size", "8",
             "--checkpoint", str(checkpoint)]
    command = (f"env {env} {shlex.join(train)}; echo $? > {shlex.quote(str(rc_file))}; "
               "sleep 600")
    term = Terminal(command)
    try:
        # past a screenful of epochs, so that rows have scrolled as a user sees them
        wait_for(lambda: len(finished_epochs(term.screen(history=True))) > ROWS, 120,
                 "a screenful of epochs", term)
        rows = [row for row in term.screen(history=True) if row]
        bad = [row for row in rows if row_kind(row) is None]
        assert not bad, "cut-off or stray text in the terminal:\n" + "\n".join(bad[:5])
        assert [row_kind(row) for row in rows[:2]] == ["header", "settings"]
        assert all(len(row) < COLUMNS for row in rows)
        epochs = finished_epochs(rows)
        assert epochs == list(range(1, len(epochs) + 1))  # one line per epoch, in order

        term.tmux("send-keys", "-t", "t", "C-c")
        wait_for(rc_file.exists, 60, "fastnn train to exit after Ctrl-C", term)
        assert rc_file.read_text().strip() == "130"
        text = "\n".join(term.screen(history=True, join=True))  # the note wraps
    finally:
        term.close()
    assert text.count("interrupted") == 1, text[-2000:]
    note = re.search(r"interrupted in epoch (\d+); (\S+) holds the first (\d+) epochs?", text)
    assert note, text[-2000:]
    last_line = max(finished_epochs(text.splitlines()))
    saved = int(note.group(3))
    # saved before its line is printed: the last printed epoch, or one more
    assert note.group(2) == str(checkpoint) and saved in (last_line, last_line + 1)
    state = fnn.load(checkpoint)
    assert int(state["epoch"]) == saved and len(state["history"]["loss"]) == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rc", "run.safetensors"]  # no temps

    # --resume continues from it
    assert main(["train", "--resume", "--checkpoint", str(checkpoint), "--batch-size", "8",
                 "--epochs", str(saved + 1)]) == 0
    resumed = fnn.load(checkpoint)
    assert int(resumed["epoch"]) == saved + 1
    for key in ("loss", "test_acc"):
        assert list(resumed["history"][key][:saved]) == list(state["history"][key])
