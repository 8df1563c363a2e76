"""Gradients through the core's backward rules: vs the analytic reference, vs finite differences."""

import pytest

from fastnn.conformance import harness


@pytest.mark.conformance_cases("diff")
def test_grad_analytic(case, dtype, device, rng):
    for sample in case.samples(rng):
        harness.check_grad_analytic(case, device, dtype, sample, rng)


@pytest.mark.conformance_cases("fd")
def test_grad_numeric(case, device, rng):
    """Central differences in float64 (skipped where the backend lacks float64)."""
    if "float64" not in device.backend.record.dtypes:
        pytest.skip(f"backend {device.type!r} has no float64 for finite differences")
    for sample in case.samples(rng):
        harness.check_grad_numeric(case, device, sample, rng)
