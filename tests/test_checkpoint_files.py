"""fastnn.checkpoint_files: killed writers' temp files are removed by the next save (a live
writer's never), and a write-protected checkpoint is refused as open() would refuse it."""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import fastnn as fnn
from fastnn import checkpoint_files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pids, flock, modes")


def _temps(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".tmp"))


# -- orphaned temp files --------------------------------------------------------------------

WRITER = """
import sys
import numpy as np
import fastnn as fnn
w = np.ones((512, 512), np.float32)  # 1 MiB
print("go", flush=True)
i = 0
while True:
    fnn.save({"w": w, "i": i}, sys.argv[1])
    i += 1
"""


@pytest.mark.slow  # (8-17 s of the README's 2-core run; CI runs it with --runslow)
def test_a_kill_9_loop_of_writers_leaves_no_orphans_after_the_next_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    rng = random.Random(0)
    kills = 12
    for _ in range(kills):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                                stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"go"
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        # each writer cleaned up after the ones before it: at most the last one's is left
        assert len(_temps(tmp_path)) <= 1
    fnn.save({"w": np.zeros(3), "i": -1}, path)
    assert _temps(tmp_path) == []
    assert fnn.load(path)["i"] == -1


HOLDER = """
import sys, time
from fastnn import checkpoint_files
def write(f):
    f.write(b"x" * 4096)
    print("writing", flush=True)
    time.sleep(120)
checkpoint_files.atomic_write(sys.argv[1], write)
"""


def test_a_live_writers_temp_file_is_kept_and_removed_once_it_dies(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"writing"
        (live,) = _temps(tmp_path)
        assert f".{proc.pid}." in live
        fnn.save({"w": np.ones(2)}, path)
        assert _temps(tmp_path) == [live]
    finally:
        proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()
    fnn.save({"w": np.ones(2)}, path)
    assert _temps(tmp_path) == []


def _dead_pid():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


LOCKER = """
import fcntl, sys, time
f = open(sys.argv[1], "rb")
fcntl.flock(f.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)
"""


def test_only_unlocked_temp_files_of_dead_pids_and_this_target_are_removed(tmp_path):
    dead = _dead_pid()
    names = {
        "orphan": f".ckpt.safetensors.{dead}.abc_123.tmp",
        "locked": f".ckpt.safetensors.{dead}.locked1.tmp",  # a writer in another pid namespace
        "other target": f".other.safetensors.{dead}.abc_123.tmp",
        "no pid (older fastnn)": ".ckpt.safetensors.abc_123.tmp",
        "not a temp": f".ckpt.safetensors.{dead}.abc_123.tmp.keep",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(tmp_path / names["locked"])],
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"locked"
        fnn.save({"w": np.ones(2)}, tmp_path / "ckpt.safetensors")
        left = set(os.listdir(tmp_path))
    finally:
        proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()
    assert left == {"ckpt.safetensors"} | {v for k, v in names.items() if k != "orphan"}


# -- write protection -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o444, 0o400, 0o440, 0o555])
def test_a_write_protected_checkpoint_is_refused_and_left_as_it_was(tmp_path, mode):
    path = tmp_path / "ckpt.safetensors"
    fnn.save({"w": np.ones(2)}, path)
    os.chmod(path, mode)
    before = path.read_bytes()
    with pytest.raises(PermissionError, match=r"write-protected .*chmod u\+w") as info:
        fnn.save({"w": np.zeros(2)}, path)
    assert info.value.filename == str(path) and str(path) in str(info.value)
    assert path.read_bytes() == before and stat.S_IMODE(os.stat(path).st_mode) == mode
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o200, 0o664])
def test_a_checkpoint_with_a_write_bit_is_replaced(tmp_path, mode):
    path = tmp_path / "ckpt.safetensors"
    fnn.save({"w": np.ones(2)}, path)
    os.chmod(path, mode)
    fnn.save({"w": np.zeros(2)}, path)
    os.chmod(path, 0o600)
    assert fnn.load(path)["w"].sum() == 0


# Python itself lives in root's home here, so the child starts as root, imports, and then
# takes nobody's effective ids, which are what open() and os.access(effective_ids) check.
AS_USER = """
import os, sys
import numpy as np
import fastnn as fnn
import fastnn.checkpoint
os.setegid(65534)
os.seteuid(65534)
path = sys.argv[1]
try:
    os.close(os.open(path, os.O_WRONLY))  # what open(path, "wb") allows, without truncating
    opened = "yes"
except PermissionError:
    opened = "no"
try:
    fnn.save({"w": np.zeros(2)}, path)
    saved = "yes"
except PermissionError as exc:
    saved = "no" if path in str(exc) else "unnamed"
print(opened, saved)
"""


needs_root = pytest.mark.skipif(getattr(os, "geteuid", lambda: 1)() != 0,
                                reason="needs root to take another user's ids")


def _as_nobody(path):
    proc = subprocess.run([sys.executable, "-c", AS_USER, path], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@needs_root
@pytest.mark.parametrize("owner, mode", [(65534, 0o444), (65534, 0o644), (0, 0o644),
                                         (0, 0o666), (65534, 0o200), (0, 0o464)])
def test_an_ordinary_user_is_refused_exactly_where_open_refuses(owner, mode):
    folder = tempfile.mkdtemp(prefix="fastnn-perm-")  # tmp_path is root's own (0700)
    try:
        os.chmod(folder, 0o777)  # so that os.replace alone would succeed
        path = os.path.join(folder, "ckpt.safetensors")
        fnn.save({"w": np.ones(2)}, path)
        os.chown(path, owner, owner)
        os.chmod(path, mode)
        opened, saved = _as_nobody(path)
        assert saved == opened, (opened, saved)
    finally:
        shutil.rmtree(folder)


@needs_root
def test_a_folder_the_user_cannot_write_names_the_folder_not_a_temp_file():
    folder = tempfile.mkdtemp(prefix="fastnn-perm-")
    try:
        os.chmod(folder, 0o555)
        script = ("import os, sys, numpy as np, fastnn as fnn, fastnn.checkpoint\n"
                  "os.setegid(65534); os.seteuid(65534)\n"
                  "try:\n    fnn.save({'w': np.ones(2)}, sys.argv[1])\n"
                  "except PermissionError as exc:\n    print(exc)\n")
        out = subprocess.run([sys.executable, "-c", script, os.path.join(folder, "c")],
                             capture_output=True, text=True, timeout=120)
        assert f"cannot create a temporary file in {folder}" in out.stdout, out
        assert ".tmp" not in out.stdout
    finally:
        shutil.rmtree(folder)


def test_remove_orphans_reports_what_it_removed(tmp_path):
    dead = _dead_pid()
    (tmp_path / f".c.{dead}.zz.tmp").write_bytes(b"")
    assert checkpoint_files.remove_orphans(str(tmp_path), "c") == [
        str(tmp_path / f".c.{dead}.zz.tmp")]
    assert checkpoint_files.remove_orphans(str(tmp_path), "c") == []
