"""``fastnn info`` stays a readable table: one line per row, long reasons below it."""

import pytest

from fastnn.cli import main
from tests.fake_backends import forget, install_backend

PROBE = """
    from fastnn.api.hookspec import hookimpl

    @hookimpl
    def backend_probe():
        return {{"available": False, "reason": {reason!r}}}
"""
LONG = "no driver found\non this machine; install it with `pip install nodrv[gpu]` and retry"


@pytest.fixture(autouse=True)
def _fresh_registry():
    forget()
    yield
    forget()


def test_long_or_multiline_reason_goes_below_the_table(tmp_path, capsys):
    install_backend(tmp_path, "uxlong-backend", "uxlong", "uxlong_mod", PROBE.format(reason=LONG))
    install_backend(tmp_path, "uxshort-backend", "uxshort", "uxshort_mod",
                    PROBE.format(reason="no card"))
    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("uxlong "))
    assert "see below" in row and "pip install" not in row
    note = next(line for line in lines if line.strip().startswith("uxlong:"))
    assert note.strip() == "uxlong: " + " ".join(LONG.split())  # whole, on one line
    assert "no card" in next(line for line in lines if line.startswith("uxshort "))
    assert not any(line.startswith("on this machine") for line in lines)
