"""Step capture: ``fnn.compile(step)`` records a step's backend calls once and replays them.

See :mod:`fastnn.capture.compiled` (the entry point), :mod:`fastnn.capture.record` (the
recording), :mod:`fastnn.capture.build` (binding a recording to the step's inputs and
outputs) and :mod:`fastnn.capture.program` (the program, its passes, its interpreter).
"""

from fastnn.capture.compiled import Compiled, compile  # noqa: A004
from fastnn.capture.program import Program, interpreter
from fastnn.capture.record import CaptureError

__all__ = ["CaptureError", "Compiled", "Program", "compile", "interpreter"]
