"""Shared pytest options for fastnn's own tests, and the note at the end of a run on how
many PyTorch cross-checks were skipped."""

import os
import re
import tempfile

import pytest

# fnn.use warns once per backend without a conformance certificate (fastnn.api.certificates):
# the tests use opencl and fake backends freely, and must not read or write the user's cache
os.environ.setdefault("FASTNN_TRUST", "*")
os.environ.setdefault("FASTNN_CACHE", tempfile.mkdtemp(prefix="fastnn-test-cache-"))
# the opencl GEMM would otherwise time its block sizes once per session (a fresh cache)
os.environ.setdefault("FASTNN_OPENCL_TUNE", "0")

# the PyTorch that CI installs (.ci/run), for the tests that compare with it
TORCH = "torch==2.13.0"
_NEEDS_TORCH = re.compile(r"could not import 'torch'|\bPyTorch\b|\btorch\b")


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests too")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _registry_kept():
    """Each test leaves the backends and devices as it found them (tests.fake_backends)."""
    from tests.fake_backends import registry_kept

    with registry_kept():
        yield


def torch_skips(reports) -> int:
    """How many of these skipped-test reports skipped for want of PyTorch."""
    count = 0
    for report in reports:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        count += bool(_NEEDS_TORCH.search(str(reason)))
    return count


def pytest_terminal_summary(terminalreporter):
    """Say, last, what a run without PyTorch left out (the README's test command runs
    without it): the count of skipped cross-checks and the command that enables them."""
    count = torch_skips(terminalreporter.stats.get("skipped", []))
    if count:
        terminalreporter.write_line(
            f"{count} PyTorch cross-check{'' if count == 1 else 's'} skipped: PyTorch is not "
            f"installed here; to run {'it' if count == 1 else 'them'}: pip install {TORCH}",
            yellow=True)
