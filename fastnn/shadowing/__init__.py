"""Shadow execution: check a backend on your own model against a reference backend.

``with fnn.shadow("cpu"): ...`` runs every hook call of the other backends a second
time on ``cpu``, on the same inputs, and raises :class:`ShadowMismatch` (or warns, or
records) at the first output outside the conformance suite's tolerance; see
:mod:`fastnn.shadowing.session`. ``fnn.shadow_report()`` is the per-op account.
"""

from fastnn.shadowing.mismatch import ShadowMismatch, ShadowWarning
from fastnn.shadowing.report import ShadowReport
from fastnn.shadowing.session import current, from_environment, shadow, shadow_report

__all__ = ["ShadowMismatch", "ShadowReport", "ShadowWarning", "current", "from_environment",
           "shadow", "shadow_report"]
