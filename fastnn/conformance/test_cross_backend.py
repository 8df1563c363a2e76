"""Cross-backend agreement: the same inputs give the same outputs and gradients."""

import pytest

from fastnn.conformance import harness


@pytest.mark.conformance_cases("run")
def test_cross(case, dtype, device, other, rng):
    if dtype not in other.backend.record.dtypes:
        pytest.skip(f"backend {other.type!r} does not support {dtype}")
    for sample in case.samples(rng):
        harness.check_cross(case, device, other, dtype, sample, rng)
