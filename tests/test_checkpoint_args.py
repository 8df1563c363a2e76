"""fnn.save / fnn.load arguments (fastnn/checkpoint.py): each bad one raises TypeError or
ValueError naming the function, what was given and the fix; nothing is written."""

from __future__ import annotations

import os

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.bad_inputs import check, rows


def _save(state, name="c.safetensors"):
    return lambda tmp: fnn.save(state, tmp / name)


BAD = [
    # (id, call(tmp_path), exception, fragment of the message)
    ("state a Module", _save(nn.Linear(2, 2)), TypeError,
     r"save: cannot store Linear at <root>; .*save its .state_dict\(\) instead"),
    ("a Module leaf", _save({"m": nn.Linear(2, 2)}), TypeError,
     r"save: cannot store Linear at m; .*save its .state_dict\(\) instead"),
    ("a set", _save({"w": {1, 2}}), TypeError, r"save: cannot store set at w; leaves must be"),
    ("complex", _save({"a": {"w": 1j}}), TypeError, r"save: cannot store complex at a/w"),
    ("bytes in a list", _save({"l": [1, b"x"]}), TypeError, r"save: cannot store bytes at l/1"),
    ("object array", _save({"w": np.array([1, "a"], dtype=object)}), TypeError,
     r"save: cannot store w: object arrays .*convert it with .astype\(\)"),
    ("string array", _save({"w": np.array(["a"])}), TypeError, r"save: cannot store w: <U1"),
    ("datetime array", _save({"w": np.array(["2020-01-01"], dtype="datetime64[D]")}),
     TypeError, r"save: cannot store w: datetime64\[D\] arrays"),
    ("complex128 array", _save({"w": np.ones(2, np.complex128)}), TypeError,
     r"save: cannot store w: complex128 arrays"),
    ("tuple key", _save({"m": {(1, 2): np.ones(2)}}), TypeError,
     r"save: keys must be strings, numbers, bools or None, got \(1, 2\) \(tuple\) at m; "
     r"convert it with str\(\)"),
    ("nan key", _save({float("nan"): 1}), TypeError, r"save: keys must be .* got nan"),
    ("path None", lambda tmp: fnn.save({"w": np.ones(2)}, None), TypeError,
     r"save: path must be a str, an os.PathLike \(e.g. pathlib.Path\) or a binary file "
     r"object, got NoneType None"),
    ("path int", lambda tmp: fnn.save({"w": np.ones(2)}, 3), TypeError,
     r"save: path must be a str, an os.PathLike .*got int 3"),
    ("load path None", lambda tmp: fnn.load(None), TypeError,
     r"load: path must be a str, an os.PathLike .*got NoneType None"),
    ("load path list", lambda tmp: fnn.load(["a"]), TypeError,
     r"load: path must be a str, an os.PathLike .*got list \['a'\]"),
]


@pytest.mark.parametrize("call, error, match", rows(BAD))
def test_bad_argument_is_named_and_nothing_is_written(tmp_path, call, error, match):
    check(call, error, match, tmp_path)
    assert os.listdir(tmp_path) == []


def test_bytes_paths_and_pathlike_paths_work(tmp_path):
    fnn.save({"w": np.arange(3.0)}, os.fsencode(tmp_path / "b.safetensors"))
    np.testing.assert_array_equal(fnn.load(tmp_path / "b.safetensors")["w"], np.arange(3.0))


def _state():
    return {"model": {"w": np.arange(6.0).reshape(2, 3), "b": np.ones(2, np.float32)},
            "opt": {"step": 3, "groups": [{"lr": 0.1}]}, "epoch": 2}


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _same(a[key], b[key])
        elif isinstance(a[key], np.ndarray):
            assert b[key].dtype == a[key].dtype
            np.testing.assert_array_equal(b[key], a[key])
        else:
            assert b[key] == a[key]


def test_save_and_load_take_binary_file_objects_as_pytorchs(tmp_path):
    import io

    buffer = io.BytesIO()
    buffer.write(b"prefix")  # written at the position, read from it
    fnn.save(_state(), buffer)
    buffer.seek(6)
    _same(_state(), fnn.load(buffer))
    with open(tmp_path / "ck.pt", "wb") as f:
        fnn.save(_state(), f)
    with open(tmp_path / "ck.pt", "rb") as f:
        _same(_state(), fnn.load(f, map_location="cpu", weights_only=True))
    _same(_state(), fnn.load(tmp_path / "ck.pt"))  # the same bytes as a path gives


def test_a_stream_that_cannot_seek_is_read_whole():
    import io

    buffer = io.BytesIO()
    fnn.save(_state(), buffer)

    class Pipe:  # only read(), as a socket's file or a pipe wrapper
        def __init__(self, data):
            self._data = data

        def read(self, n=-1):
            data, self._data = self._data, b""
            return data

    _same(_state(), fnn.load(Pipe(buffer.getvalue())))


def test_a_truncated_or_text_stream_is_refused_by_name(tmp_path):
    import io

    buffer = io.BytesIO()
    fnn.save(_state(), buffer)
    cut = io.BytesIO(buffer.getvalue()[:-5])
    with pytest.raises(ValueError, match="load: 'BytesIO' is not a readable safetensors "
                                         "checkpoint .*truncated"):
        fnn.load(cut)
    (tmp_path / "t.txt").write_text("hello")
    with open(tmp_path / "t.txt") as text:
        with pytest.raises(TypeError, match="not a binary file .*open it with 'rb'"):
            fnn.load(text)


def test_a_bad_state_writes_nothing_to_the_stream():
    import io

    buffer = io.BytesIO()
    with pytest.raises(TypeError, match="save: cannot store w"):
        fnn.save({"w": np.array(["a"])}, buffer)
    assert buffer.getvalue() == b""
