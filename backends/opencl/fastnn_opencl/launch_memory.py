"""Buffer sharing for a launch list (:mod:`fastnn_opencl.launch_code`): the arrays a step
makes and drops inside itself share buffers by liveness, as the eager step's pool reuses
them, so a replay holds about what the eager step holds.

Each array lives from the first launch (or hook call) that uses its buffer to the last;
one queue runs the launches in order, so a buffer whose last use is behind takes the next
array that fits in it (the smallest free one at least as large, and at most twice).
"""

from __future__ import annotations

import bisect


def share(lifetimes: dict, allocate) -> dict:
    """{buffer id: the buffer it uses at replay} for ``lifetimes`` {buffer id: (first use,
    last use, bytes)}; ``allocate(nbytes)`` makes a new buffer."""
    order = sorted(lifetimes, key=lambda b: lifetimes[b][0])
    free: list = []  # sorted (bytes, serial, buffer)
    busy: list = []  # sorted (last use, serial, bytes, buffer)
    assigned, serial = {}, 0
    for b in order:
        first, last, nbytes = lifetimes[b]
        while busy and busy[0][0] < first:
            _, k, size, buf = busy.pop(0)
            bisect.insort(free, (size, k, buf))
        k = bisect.bisect_left(free, (nbytes, -1))
        if k < len(free) and free[k][0] <= 2 * nbytes:
            size, serial_of, buf = free.pop(k)
        else:
            serial += 1
            size, serial_of, buf = nbytes, serial, allocate(nbytes)
        assigned[b] = buf
        bisect.insort(busy, (last, serial_of, size, buf))
    return assigned
