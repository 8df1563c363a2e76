"""Shared pytest options for fastnn's own tests, and the note at the end of a run on how
many PyTorch cross-checks were skipped."""

import contextlib
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


@contextlib.contextmanager
def registry_kept():
    """Give the Device objects parsed before the block (and their backends) back after it,
    where the block refreshed the registry (tests.fake_backends.forget). A tensor holds its
    Device object: the tensors that test modules make at import would otherwise sit on
    devices that no new tensor matches ("expected all tensors on one device, found cpu and
    cpu"). Backends the block installed stay discoverable; those it removed are not put
    back."""
    from fastnn.api import device, registry

    devices, loaded, default = dict(device._canonical), dict(registry._loaded), list(
        device._default)
    try:
        yield
    finally:
        if device._canonical != devices:
            with registry._lock:
                present = registry._discover()
                for key, dev in devices.items():
                    if key[0] in present and device._canonical.get(key) is not dev:
                        registry._loaded[key[0]] = loaded[key[0]]
                        device._canonical[key] = dev
                        device._cache.clear()  # spellings parse again, to these objects
                if all(d.backend.name in present for d in default):
                    device._default[:] = default


@pytest.fixture(autouse=True)
def _registry_kept():
    """Each test leaves the devices that tensors hold as it found them (registry_kept)."""
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
