"""Skip this directory cleanly where pyopencl or an OpenCL platform is missing."""

import pytest

from fastnn.api import registry

pytest.importorskip("pyopencl")


@pytest.fixture(scope="session")
def ocl():
    """The fastnn_opencl module, with the test skipped when no OpenCL device is usable."""
    import fastnn_opencl

    record = fastnn_opencl.probe()
    if not record["available"]:
        pytest.skip(f"OpenCL unavailable: {record['reason']}")
    return registry.hook_namespace(fastnn_opencl)  # the hooks of all its modules
