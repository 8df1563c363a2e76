"""All conformance cases, one per hook of :mod:`fastnn.api.hookspec`, by hook name."""

from fastnn.conformance import (  # noqa: F401  (importing a module registers its cases)
    cases_activations,
    cases_collective,
    cases_conv,
    cases_conv2d,
    cases_elementwise,
    cases_fused,
    cases_indexing,
    cases_io,
    cases_math,
    cases_math_more,
    cases_optim,
    cases_random,
    cases_scans,
    cases_special,
    cases_tensor,
)
from fastnn.conformance.case import CASES, Case, Sample

__all__ = ["CASES", "Case", "Sample"]
