"""Checkpoint edge cases: errors name the target path or the problem, never a temp file or
a raw AttributeError; a checkpoint from a newer fastnn is refused, not half-read."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fastnn as fnn
from fastnn import checkpoint

pytest.importorskip("safetensors")


def test_saving_into_a_missing_folder_or_onto_a_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"the folder .*nowhere does not exist"):
        fnn.save({"w": np.ones(2)}, tmp_path / "nowhere" / "model.safetensors")
    with pytest.raises(IsADirectoryError, match=r"is a directory; give a file name"):
        fnn.save({"w": np.ones(2)}, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no temp files left behind


def test_arrays_safetensors_cannot_hold_are_named(tmp_path):
    with pytest.raises(TypeError, match=r"save: .*w: complex128"):
        fnn.save({"w": np.ones(2, dtype=np.complex128)}, tmp_path / "c.safetensors")


def _rewrite_metadata(path, info):
    from safetensors.numpy import load_file, save_file

    save_file(load_file(str(path)), str(path), metadata={checkpoint._META_KEY: json.dumps(info)})


@pytest.mark.parametrize("info", [[1, 2], {"d": [1]}, {"format": "fastnn.checkpoint"}])
def test_corrupt_metadata_is_a_value_error(tmp_path, info):
    path = tmp_path / "m.safetensors"
    fnn.save({"w": np.ones(2)}, path)
    _rewrite_metadata(path, info)
    with pytest.raises(ValueError, match=r"corrupt fastnn metadata"):
        fnn.load(path)


def test_a_newer_checkpoint_version_is_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    fnn.save({"w": np.ones(2)}, path)
    _rewrite_metadata(path, {"format": checkpoint.FORMAT, "version": checkpoint.VERSION + 98,
                             "tree": "a layout this fastnn does not know"})
    with pytest.raises(ValueError, match=r"written by a newer fastnn .*upgrade fastnn"):
        fnn.load(path)
