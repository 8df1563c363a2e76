"""scatter_add for float32/float64 in a fixed order: deterministic, equal to ``np.add.at``.

``cupyx.scatter_add`` adds with atomics, so the order in which a repeated index's
values meet (and the last bits of their sum) changes from call to call on a GPU; an
embedding backward then differs between two runs of one step, and ``fnn.compile``'s
bit-for-bit first-replay check refuses the step (issue 23). Here the entries that meet
at one output element are added one after another in index order, onto the value
already there, as ``np.add.at`` (the cpu backend) does. Two plans (``cu/scatter.cu``):

- lines: one thread per line (o, k) of the (outer, m, inner) layout walks its m entries;
  enough threads when there are many lines and the walks are short;
- segments: the entries sorted by (destination, position), one thread per destination;
  for few lines with long walks (a 1-d scatter, an embedding gradient's columns), where
  a walk per line would leave the GPU nearly idle. The sort costs a few launches.

Either way a destination's own entries add serially: an index repeated r times costs r
dependent adds in one thread (a tree sum would be faster but would not equal add.at).
Tests run this module with NumPy standing in for cupy and the kernels built for the host.
"""

from __future__ import annotations

from fastnn_cuda import kernels
from fastnn_cuda._cupy import cupy as cp

# the segment plan is used when there are fewer lines than this (too few threads for a
# GPU) and the walks are longer than SHORT_WALK (a short walk is cheaper than a sort)
SORT_BELOW_LINES = 4096
SHORT_WALK = 64


def by_sort(lines: int, m: int) -> bool:
    """Whether ``lines`` lines of ``m`` entries each take the sorted (segment) plan."""
    return lines < SORT_BELOW_LINES and m > SHORT_WALK


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
    if not by_sort(outer * inner, m):
        kernels.launch_flat("scatter_add_lines", out.dtype, device, outer * inner,
                            (out, idx, values, outer * inner, n, m, inner))
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
