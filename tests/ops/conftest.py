"""The devices every op test runs on: cpu, and opencl where it is usable here; ``dev`` adds
the copying backend (tests/ops/copying_backend.py) of the view and in-place tests."""

import pytest

import fastnn as fnn
from tests.fake_backends import forget, install_backend
from tests.ops.copying_backend import COPYING


def _usable(name):
    return any(r.name == name and r.available for r in fnn.backends())


DEVICES = ["cpu"] + (["opencl"] if _usable("opencl") else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(scope="module")
def copying(tmp_path_factory):
    install_backend(tmp_path_factory.mktemp("copying"), "fastnn-backend-copying", "copying",
                    "fastnn_copying", COPYING)
    yield "copying"
    forget()


@pytest.fixture(params=DEVICES + ["copying"])
def dev(request):
    if request.param == "copying":
        return request.getfixturevalue("copying")
    return request.param
