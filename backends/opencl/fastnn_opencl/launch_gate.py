"""A launch list's runs of launches enqueued behind a user event
(:mod:`fastnn_opencl.launch_code`).

PoCL runs kernels on the cores this thread enqueues from: while a run of launches is
being enqueued, a user event at its head keeps the device from starting (and competing
with each enqueue); the event completes at the run's end, or when the run fails, so the
queue is never left held. A hook call ends a run, since it may wait for the device.
"""

from __future__ import annotations

import os

GATE = os.environ.get("FASTNN_OPENCL_GATE", "1") != "0"
"""Whether a replay holds the queue behind a user event while it enqueues a run of
launches (``FASTNN_OPENCL_GATE=0``: not)."""
GATE_MIN = 8  # launches in a run worth a gate (a user event and a marker)


def gated(body: list[str]) -> list[str]:
    """``body`` with each run of at least GATE_MIN launches between hook calls enqueued
    behind a user event that is completed at the run's end (a failure completes it too, so
    the queue never stays held): the device, whose cores PoCL shares with this thread,
    starts once the run is in the queue instead of competing with each enqueue."""
    out: list[str] = []
    run: list[str] = []

    def close():
        if sum(line.startswith("    E(") for line in run) >= GATE_MIN:
            out.append("    gate = UE(CTX)")
            out.append("    MK(Q0, [gate])")
            out.append("    try:")
            out.extend("    " + line if not line.startswith("    #") else line
                       for line in run)
            out.append("    finally:")
            out.append("        gate.set_status(0)")
        else:
            out.extend(run)
        run.clear()

    for line in body:
        if _is_hook_call(line):
            close()
            out.append(line)
        else:
            run.append(line)
    close()
    return out


def _is_hook_call(line: str) -> bool:
    code = line.strip()
    if code.startswith("#"):
        return False
    head, _, rest = code.partition("= ")
    call = rest if rest else head
    return call.startswith("f") and call[1:].split("(", 1)[0].isdigit()
