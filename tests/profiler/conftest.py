"""Every profiler test leaves no profiler attached."""

import pytest

from fastnn.profiler import recorder


@pytest.fixture(autouse=True)
def _no_profiler_left():
    yield
    assert recorder.current() is None, "a test left a profiler attached"
