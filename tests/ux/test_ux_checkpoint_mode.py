"""``fnn.save`` leaves the permissions a plain write would, not mkstemp's 0600."""

import os
import stat
import sys

import numpy as np
import pytest

import fastnn as fnn

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")


def test_new_checkpoint_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        fnn.save({"w": np.ones(3, np.float32)}, tmp_path / "a.safetensors")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.safetensors").st_mode) == 0o644


def test_overwrite_keeps_the_old_files_mode(tmp_path):
    path = tmp_path / "b.safetensors"
    fnn.save({"w": np.ones(3, np.float32)}, path)
    os.chmod(path, 0o640)
    fnn.save({"w": np.zeros(3, np.float32)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert fnn.load(path)["w"].sum() == 0


def test_the_umask_is_read_without_being_changed():
    import os

    from fastnn.checkpoint_files import _umask

    old = os.umask(0o027)
    try:
        assert _umask() == 0o027
        assert os.umask(0o027) == 0o027  # still what it was set to
    finally:
        os.umask(old)
