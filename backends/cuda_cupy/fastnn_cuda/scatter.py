"""scatter_add for float32/float64 in a fixed order: deterministic, equal to ``np.add.at``.

``cupyx.scatter_add`` adds with atomics, so the order in which a repeated index's
values meet (and the last bits of their sum) changes from call to call on a GPU; an
embedding backward then differs between two runs of one step, and ``fnn.compile``'s
bit-for-bit first-replay check refuses the step (issue 23). Here the entries that meet
at one output element are added one after another in index order, onto the value
already there, as ``np.add.at`` (the cpu backend) does. Two plans (``cu/scatter.cu``):

- lines: ``groups`` threads per line (o, k) of the (outer, m, inner) layout, each walking
  the line's m entries and adding those whose index falls in its group (j % groups):
  one thread (groups = 1) per line when there are many lines; more for few lines with
  long walks (an embedding gradient's columns), where a walk per line would leave the
  GPU nearly idle. Fixed sizes and no host work, so a CUDA graph (``fnn.compile``)
  captures it;
- sort: the entries sorted by (destination, position), one thread per destination, for
  the case where re-reading a line's indices once per group would cost too much (a long
  1-d scatter). NOTE: cupy's sort synchronizes with the host, so a step that takes
  this plan is not captured as a CUDA graph (nor was the atomic path, whose boolean
  masks synchronize too).

Either way a destination's own entries add serially: an index repeated r times costs r
dependent adds in one thread (a tree sum would be faster but would not equal add.at).
Tests run this module with NumPy standing in for cupy and the kernels built for the host.
"""

from __future__ import annotations

from fastnn_cuda import kernels
from fastnn_cuda._cupy import cupy as cp

THREADS = 8192  # threads the lines plan aims for when a line's walk is long
SHORT_WALK = 64  # entries per line that one thread walks without help
READS_MAX = 1 << 28  # index reads (lines * groups * m) the lines plan may spend


def plan(lines: int, m: int, n: int) -> int:
    """Groups per line for the lines plan (>= 1), or 0 for the sort plan, for ``lines``
    lines of ``m`` entries into ``n`` destinations each."""
    if lines >= THREADS or m <= SHORT_WALK:
        return 1
    groups = max(1, min(n, -(-THREADS // lines)))
    return groups if lines * groups * m <= READS_MAX else 0


def ordered_scatter_add(out, axis: int, index, src) -> None:
    """``np.add.at``-exact, in place: add ``src`` at ``index`` along ``axis`` of ``out``.

    ``out`` is C-contiguous with a kernel dtype; ``index`` (int64) and ``src`` share a
    shape equal to ``out``'s but on ``axis``, and are not empty; an index outside
    [0, out.shape[axis]) is skipped."""
    shape = index.shape
    outer = 1
    for d in shape[:axis]:
        outer *= d
    inner = 1
    for d in shape[axis + 1:]:
        inner *= d
    n, m = out.shape[axis], shape[axis]
    idx = cp.ascontiguousarray(index, dtype=cp.int64)
    values = cp.ascontiguousarray(cp.broadcast_to(src, shape), dtype=out.dtype)
    device = out.device.id
    groups = plan(outer * inner, m, n)
    if groups:
        kernels.launch_flat("scatter_add_lines", out.dtype, device, outer * inner * groups,
                            (out, idx, values, outer * inner, groups, n, m, inner))
        return
    flat = idx.reshape(-1)
    pos = cp.nonzero((flat >= 0) & (flat < n))[0]
    if not pos.size:
        return
    k = pos % inner
    o = pos // (m * inner)
    r = (pos // inner) % m
    dest = (o * n + flat[pos]) * inner + k
    # a unique key (destination, then r): any sort, stable or not, gives add.at's order
    order = cp.argsort(dest * m + r)
    pos, dest = pos[order], dest[order]
    first = cp.ones(dest.shape, dtype=bool)
    first[1:] = dest[1:] != dest[:-1]
    starts = cp.nonzero(first)[0]
    segments = int(starts.size)
    bounds = cp.concatenate([starts, cp.full((1,), pos.size, dtype=cp.int64)])
    seg_dest = cp.ascontiguousarray(dest[starts])
    kernels.launch_flat("scatter_add_segments", out.dtype, device, segments,
                        (out, values, cp.ascontiguousarray(pos, dtype=cp.int64),
                         cp.ascontiguousarray(bounds, dtype=cp.int64), seg_dest, segments))
