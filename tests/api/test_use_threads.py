"""``with fnn.use(...)`` changes the default device of its own thread only."""

from __future__ import annotations

import threading

import pytest

import fastnn as fnn
from tests.fake_backends import CPU_CLONE, forget, install_backend


@pytest.fixture
def clone(tmp_path):
    install_backend(tmp_path, "clone-backend", "clone", "clone_mod", CPU_CLONE)
    yield "clone:1"
    forget()


def _device_in_another_thread():
    seen = []
    worker = threading.Thread(target=lambda: seen.append(str(fnn.zeros(2).device)))
    worker.start()
    worker.join()
    return seen[0]


def test_a_with_block_does_not_move_other_threads(clone):
    with fnn.use(clone):
        assert str(fnn.zeros(2).device) == clone
        assert _device_in_another_thread() == "cpu"
        fnn.use("clone:0")  # a plain call inside the block changes the block's device
        assert str(fnn.zeros(2).device) == "clone:0"
        assert _device_in_another_thread() == "cpu"
        with fnn.use("cpu"):
            assert str(fnn.zeros(2).device) == "cpu"
        assert str(fnn.zeros(2).device) == "clone:0"
    assert str(fnn.get_device()) == "cpu"


def test_a_plain_call_sets_the_process_wide_default(clone):
    fnn.use(clone)
    try:
        assert str(fnn.zeros(2).device) == clone
        assert _device_in_another_thread() == clone
    finally:
        fnn.use("cpu")
    assert _device_in_another_thread() == "cpu"
