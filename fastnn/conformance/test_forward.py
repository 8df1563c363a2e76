"""Forward results against the NumPy float64 reference, and the edge cases."""

import pytest

from fastnn.conformance import harness


def test_forward(case, dtype, device, rng):
    """Typical inputs, broadcasting, size-1 and size-0 dims (custom cases: their own check)."""
    if case.custom:
        case.check(device, dtype, rng)
        return
    for sample in case.samples(rng):
        harness.check_forward(case, device, dtype, sample)


@pytest.mark.conformance_cases("run")
def test_edges(case, dtype, device, rng):
    """Large and tiny magnitudes, NaN/Inf where the reference defines them, transposed inputs."""
    for sample in case.edges(rng, dtype) if case.edges else []:
        harness.check_forward(case, device, dtype, sample, check="edge case")
    for sample in case.samples(rng):
        harness.check_forward(case, device, dtype, sample, check="transposed input",
                              transposed=True)
