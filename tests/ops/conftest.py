"""The devices every op test runs on: cpu, and opencl where it is usable here."""

import pytest

import fastnn as fnn


def _usable(name):
    return any(r.name == name and r.available for r in fnn.backends())


DEVICES = ["cpu"] + (["opencl"] if _usable("opencl") else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
