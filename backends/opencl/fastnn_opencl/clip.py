"""Gradient clipping's hooks, ``total_norm`` and ``clip_grads_with_norm`` (``kernels/clip.cl``).

``total_norm`` launches one kernel an array, each writing the parts of its values' sum
(of squares, of |x|^p, or their max) into one buffer, and one more that joins the parts
and takes the root: a 0-d array on the device, nothing read back. The composite made
three hook calls an array. ``clip_grads_with_norm`` launches one kernel an array, each
computing the coefficient from the total where it runs, so nothing waits for the norm.
"""

from __future__ import annotations

import math

import numpy as np

from fastnn.api.composite_optim import norm_dtype
from fastnn.api.hookspec import hookimpl
from fastnn_opencl import misc
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, rounded

FILE = "clip.cl"
_I = np.int32
PER_ITEM = 1024  # values an item of k_norm_parts sums (fewer items for short arrays)
MAX_ITEMS = 4096  # items an array's launch has at most (its parts in the finishing sum)



def _kind(norm_type: float) -> int:
    return 0 if norm_type == 2.0 else (1 if norm_type == math.inf else 2)


@hookimpl
def total_norm(arrays, norm_type):
    dev = arrays[0].dev
    acc = norm_dtype(arrays)
    kind, p = _kind(norm_type), NP_TYPES[acc].type(0.0 if norm_type == math.inf else norm_type)
    work = [(misc.contiguous(x), min(MAX_ITEMS, -(-x.size // PER_ITEM))) for x in arrays if x.size]
    parts = dev.empty((max(1, sum(items for _, items in work)),), acc)
    slot = 0
    for x, items in work:
        kernel = dev.kernel(FILE, "k_norm_parts", (("T", CL_TYPES[x.dtype]),
                                                   ("ACC", CL_TYPES[acc])),
                            [None, _I, None, _I, _I, _I, _I, NP_TYPES[acc]])
        kernel(dev.queue, (rounded(items),), None, parts.data, slot, x.data, x.offset, x.size,
               items, kind, p)
        slot += items
    out = dev.empty((), acc)
    finish = dev.kernel(FILE, "k_norm_finish", (("T", CL_TYPES[acc]), ("ACC", CL_TYPES[acc])),
                        [None, None, _I, _I, NP_TYPES[acc]])
    finish(dev.queue, (1,), None, out.data, parts.data, slot, kind, p)
    return out


@hookimpl
def clip_grads_with_norm(grads, max_norm, total):
    acc = total.dtype
    out = []
    for g in grads:
        x, result = misc.contiguous(g), g.dev.empty(g.shape, g.dtype)
        if g.size:
            kernel = g.dev.kernel(FILE, "k_clip", (("T", CL_TYPES[g.dtype]),
                                                   ("ACC", CL_TYPES[acc])),
                                  [None, None, _I, _I, None, _I, NP_TYPES[acc]])
            kernel(g.dev.queue, (rounded(g.size),), None, result.data, x.data, x.offset,
                   g.size, total.data, total.offset, NP_TYPES[acc].type(max_norm))
        out.append(result)
    return out
