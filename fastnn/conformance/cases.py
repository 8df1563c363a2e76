"""All conformance cases, one per hook of :mod:`fastnn.api.hookspec`, by hook name."""

from fastnn.conformance import (  # noqa: F401  (importing a module registers its cases)
    cases_activations,
    cases_attention,
    cases_capture,
    cases_collective,
    cases_conv,
    cases_conv2d,
    cases_elementwise,
    cases_fused,
    cases_gelu,
    cases_grid,
    cases_indexing,
    cases_io,
    cases_layernorm,
    cases_linalg,
    cases_linalg_decomp,
    cases_math,
    cases_math_more,
    cases_norm,
    cases_optim,
    cases_pool,
    cases_products,
    cases_random,
    cases_recurrent,
    cases_scans,
    cases_special,
    cases_structure,
    cases_tensor,
    cases_transfer,
    cases_vis,
    cases_vis3d,
    cases_vis_losses,
    cases_vis_norms,
)
from fastnn.conformance.case import CASES, Case, Sample

__all__ = ["CASES", "Case", "Sample"]
