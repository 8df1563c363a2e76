"""Step capture: ``fnn.compile(step)`` records a step's backend calls once and replays them.

See :mod:`fastnn.capture.compiled` (the entry point), :mod:`fastnn.capture.record` (the
recording), :mod:`fastnn.capture.build` (binding a recording to the step's inputs and
outputs), :mod:`fastnn.capture.entry` (a signature's replay and checks),
:mod:`fastnn.capture.state` (what a step reads and writes outside its arguments),
:mod:`fastnn.capture.segments`, :mod:`fastnn.capture.split` and the modules it names
(graph breaks: a step run as compiled segments with its Python kept) and
:mod:`fastnn.api.program` (the program, its passes, its interpreter: in the backend
contract, since a backend may compile programs itself).
"""

from fastnn.api.program import Program, interpreter
from fastnn.capture.compiled import Compiled, compile  # noqa: A004
from fastnn.capture.record import CaptureError

__all__ = ["CaptureError", "Compiled", "Program", "compile", "interpreter"]
