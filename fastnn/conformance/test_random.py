"""Randomised shapes and values (hypothesis), forward and analytic gradients."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastnn.conformance import harness


@pytest.mark.conformance_cases("run")
def test_random(case, dtype, device, examples):
    if case.random is None:
        pytest.skip(f"{case.name} has no random generator")

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        sample = case.random(data.draw)
        harness.check_forward(case, device, dtype, sample, check="random")
        if case.differentiable:
            rng = np.random.default_rng(0)
            harness.check_grad_analytic(case, device, dtype, sample, rng)

    check()
