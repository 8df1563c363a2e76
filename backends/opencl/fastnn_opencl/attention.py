"""The attention hooks: scaled dot-product attention forward and backward as fused kernels
(``kernels/attention.cl``), one launch forward and two backward, in place of the
composite's batched matmuls, mask, softmax and the copies that made the strided head
views of q, k and v dense for them.

q, k, v, the mask and the gradient are read through their strides (self-attention's heads
are strided views of one projection): their leading axes are collapsed together to at most
two, else the inputs are copied dense first. One work-item per query row (per key row for
dk and dv), which loops over the other rows: on PoCL the work-items of a group run as
vector lanes, and at attention's sizes (rows of tens to hundreds) the scores of a row stay
in the cache.
"""

from __future__ import annotations

import math
import types

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn.api.own_hooks import packed_attention_hooks
from fastnn_opencl import elementwise, elementwise_plan, indexing, misc
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, contiguous_strides, rounded

FILE = "attention.cl"
_I = np.int32
WG = 16  # work-items (rows) per group


def _broadcast(x: CLArray, shape: tuple) -> CLArray:
    """A view of ``x`` broadcast to ``shape`` (stride 0 along new or size-1 axes)."""
    pad = len(shape) - x.ndim
    strides = [0] * pad + [0 if n == 1 and m != 1 else s
                           for n, m, s in zip(x.shape, shape[pad:], x.strides)]
    return x.view(tuple(shape), tuple(strides))


def _lead(lead: tuple, arrays: list) -> tuple:
    """(B1, B2, per array its (b1, b2) strides) of the leading axes ``lead`` of ``arrays``
    collapsed together, or None where more than two axes remain."""
    rank = len(lead)
    shape, strides = elementwise_plan.collapse(lead, [a.strides[:rank] for a in arrays]
                                          + [contiguous_strides(lead)])
    if len(shape) > 2:
        return None
    pad = 2 - len(shape)
    shape = (1,) * pad + tuple(shape)
    return shape[0], shape[1], [(0,) * pad + tuple(s) for s in strides[:-1]]


def _prepare(lead: tuple, arrays: list) -> tuple:
    """(arrays, B1, B2, int4 strides per array): dense copies where the leading axes do
    not collapse to two."""
    found = _lead(lead, arrays)
    if found is None:
        arrays = [a if a.is_contiguous else elementwise.copy(a) for a in arrays]
        found = _lead(lead, arrays)
    b1, b2, lead_strides = found
    vecs = [elementwise_plan.int_vector((*s, *a.strides[-2:]), 4)
            for a, s in zip(arrays, lead_strides)]
    return arrays, b1, b2, vecs


def _width(arrays: list, sizes: tuple) -> int:
    """The vector width over the feature axis: the widest of 32 bytes or less that divides
    every size in ``sizes``, where every array's feature axis is contiguous; else 1."""
    if any(a.strides[-1] != 1 for a in arrays):
        return 1
    widest = 32 // NP_TYPES[arrays[0].dtype].itemsize
    for width in (8, 4, 2):
        if width <= widest and all(n % width == 0 for n in sizes):
            return width
    return 1


REGISTER_VECTORS = 8  # the most vectors per row kept in registers (NE, NEV)


def _defines(x: CLArray, mask, width: int, e: int, ev: int) -> tuple:
    defines = (("T", CL_TYPES[x.dtype]), ("HAS_MASK", int(mask is not None)), ("VW", width))
    if width > 1 and min(e, ev) > 0 and max(e, ev) // width <= REGISTER_VECTORS:
        defines += (("NE", e // width), ("NEV", ev // width))
    return defines


@hookimpl
def attention(q, k, v, mask, scale):
    dev = q.dev
    lead, (length, e), (source, ev) = q.shape[:-2], q.shape[-2:], v.shape[-2:]
    out = dev.empty(lead + (length, ev), q.dtype)
    weights = dev.empty(lead + (length, source), q.dtype)
    if not out.size and not weights.size:
        return out, weights
    arrays = [q, k, v]
    if mask is not None:
        arrays.append(_broadcast(mask, lead + (length, source)))
    arrays, b1, b2, st = _prepare(lead, arrays)
    m, m_off, m_st = (arrays[3].data, arrays[3].offset, st[3]) if mask is not None else (
        q.data, 0, st[0])
    q, k, v = arrays[:3]
    width = _width([q, k, v], (e, ev))
    kernel = dev.kernel(FILE, "k_attention", _defines(q, mask, width, e, ev),
                        [None, None, None, _I, None, None, _I, None, None, _I, None,
                         None, _I, None, _I, _I, _I, _I, NP_TYPES[q.dtype]])
    kernel(dev.queue, (rounded(length, WG), b2, b1), (WG, 1, 1),
           out.data, weights.data,
           q.data, q.offset, st[0], k.data, k.offset, st[1], v.data, v.offset, st[2],
           m, m_off, m_st, length, source, e, ev, scale)
    return out, weights


@hookimpl
def attention_backward(q, k, v, weights, grad, scale):
    dev = q.dev
    lead, (length, e), (source, ev) = q.shape[:-2], q.shape[-2:], v.shape[-2:]
    if not math.prod(lead) or not length or not source:  # sums over no rows: zeros
        return tuple(misc.fill(a.shape, 0, q.dtype, dev) for a in (q, k, v))
    dq = dev.empty(q.shape, q.dtype)
    dk = dev.empty(k.shape, q.dtype)
    dv = dev.empty(v.shape, q.dtype)
    if not weights.is_contiguous:
        weights = elementwise.copy(weights)
    (q, k, v, grad), b1, b2, st = _prepare(lead, [q, k, v, _broadcast(grad, lead + (length, ev))])
    ds = dev.empty(weights.shape, q.dtype)
    defines = _defines(q, None, _width([q, k, v, grad], (e, ev)), e, ev)
    t = NP_TYPES[q.dtype]
    first = dev.kernel(FILE, "k_attention_dq", defines,
                       [None, None, None, None, _I, None, None, _I, None, None, _I, None,
                        _I, _I, _I, _I, t])
    first(dev.queue, (rounded(length, WG), b2, b1), (WG, 1, 1),
           dq.data, ds.data, weights.data,
          grad.data, grad.offset, st[3], k.data, k.offset, st[1], v.data, v.offset, st[2],
          length, source, e, ev, scale)
    second = dev.kernel(FILE, "k_attention_dkv", defines,
                        [None, None, None, None, None, _I, None, None, _I, None, _I, _I, _I,
                         _I])
    second(dev.queue, (rounded(source, WG), b2, b1), (WG, 1, 1),
           dk.data, dv.data, ds.data,
           weights.data, q.data, q.offset, st[0], grad.data, grad.offset, st[3], length,
           source, e, ev)
    return dq, dk, dv


# attention_packed and its backward: the composites on this backend's own views, cat and
# the hooks above (self-attention's q, k, v out of, and their gradients into, one array)
globals().update(packed_attention_hooks(types.SimpleNamespace(
    slice=indexing.slice, reshape=misc.reshape, transpose=misc.transpose, cat=indexing.cat,
    attention=attention, attention_backward=attention_backward)))
