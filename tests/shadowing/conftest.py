"""Shadow mode's comparison tests run three times: with its batch comparison in C
(bulk.c, where it builds), with close.c's loops alone, and with NumPy's passes; a module
asks with ``pytestmark = pytest.mark.usefixtures("path")``."""

import pytest

from fastnn.shadowing import diff


@pytest.fixture(params=["bulk", "C", "NumPy"])
def path(request, monkeypatch):
    """bulk: bulk.c and close.c (skipped where they did not build); C: close.c only;
    NumPy: both switched off."""
    if request.param == "bulk" and diff.bulk_function() is None:
        pytest.skip(f"no C batch comparison here: {diff._bulk[1]}")
    if request.param in ("bulk", "C"):
        if diff._close_functions() is None:
            pytest.skip(f"no C comparison here: {diff.native_status()}")
    else:
        monkeypatch.setattr(diff, "_close", [None, "off for a test"])
    if request.param != "bulk":
        monkeypatch.setattr(diff, "_bulk", [None, "off for a test", None])
    return request.param
