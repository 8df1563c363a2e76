"""LSTM and GRU layers over a whole sequence (``kernels/recurrent.cl``), forward and backward.

The input projection of every step is one GEMM; then one kernel runs the fused cell of
every step (the step's recurrent product, the gates, their activations and the state
update; backward: the recurrent product of the next step's gradient, the gate gradients
and the carried state gradient): on CPU devices the whole sequence in one work-item (its
recurrent products as register-blocked GEMMs), on GPUs one launch where a work-group holds
the batch (a barrier between steps), else one launch per step.
The weight gradients are one GEMM each over all steps, as the cpu backend and PyTorch's
fused cells do. Every array the kernels touch is contiguous (a strided input is copied
once).
"""

from __future__ import annotations

import os

import numpy as np

from fastnn.api.hookspec import hookimpl
from fastnn_opencl import elementwise, misc
from fastnn_opencl.linalg import matmul as _matmul
from fastnn_opencl.misc import fill
from fastnn_opencl.reduce import sum as _sum
from fastnn_opencl.runtime import CL_TYPES, NP_TYPES, CLArray, cl, contiguous_strides, rounded

FILE = "recurrent.cl"
_I = np.int32



def _dense0(x: CLArray) -> CLArray:
    """x contiguous and at offset 0 (copied if not): kernels index it from its buffer's start."""
    return x if x.is_contiguous and x.offset == 0 else elementwise.copy(x)


def _t(x: CLArray) -> CLArray:
    """The transposed view of a 2-d array."""
    return x.view(x.shape[::-1], x.strides[::-1])


def _flat(x: CLArray) -> CLArray:
    """A contiguous (T, N, F) array as (T * N, F)."""
    shape = (x.shape[0] * x.shape[1], x.shape[2])
    return x.view(shape, contiguous_strides(shape))


def _lanes(dev, dtype: str, hid: int) -> int:
    """The vector width of the cell kernels: the widest of 8, 4, 2, 1 that divides H and is
    at most the device's native width (a work-item owns that many hidden units).

    NOTE: not 16: PoCL's pip build reports 16 floats on AVX-512 machines but compiles
    builtins (exp, tanh) for 16-lane vectors with a broken ABI there (the program
    builds with no kernels in it), and for the same reason no vector wider than 32 bytes
    (8 doubles fail as 16 floats do: float64 models with a hidden size divisible by 8)."""
    native = max(1, dev.vector_width(dtype))
    widest = 32 // NP_TYPES[dtype].itemsize
    return next(w for w in (8, 4, 2, 1) if w <= min(native, widest) and hid % w == 0)


def _kernel(dev, dtype: str, name: str, arg_dtypes: list, hid: int):
    """(kernel, work-items per row) of cell kernel ``name`` for hidden size ``hid``."""
    lanes = _lanes(dev, dtype, hid)
    kernel = dev.kernel(FILE, name, (("T", CL_TYPES[dtype]), ("VW", lanes)), arg_dtypes)
    return kernel, hid // lanes


_GROUP_LIMITS: dict = {}


def _one_launch(dev) -> bool:
    """Whether a sequence runs as one work-group launch: on GPUs (launch latency dominates
    there); on CPU devices one launch per step measured less time (PoCL runs a one-group
    launch on one thread and keeps every work-item's state across each barrier).
    ``FASTNN_OPENCL_RNN=group|step`` forces one way (to test both anywhere)."""
    forced = os.environ.get("FASTNN_OPENCL_RNN", "")
    return forced == "group" or (not dev.is_cpu and forced != "step")


def _serial(dev) -> bool:
    """Whether the LSTM and the GRU run their whole sequence in ONE work-item (``k_lstm_seq1``,
    ``k_gru_seq1``): on CPU devices (PoCL). One launch instead of one per step (each wakes
    PoCL's threads; on a busy machine each waits for a core), and no barrier.
    ``FASTNN_OPENCL_RNN=group|step`` picks the other ways."""
    return dev.is_cpu and os.environ.get("FASTNN_OPENCL_RNN", "") not in ("group", "step")


def _sequence(kernel, dev, cols: int, n: int, t_len: int, head: tuple, tail: tuple,
              backward: bool = False, serial=None) -> None:
    """Run a sequence kernel over every step: ``serial`` (the one-work-item kernel) where
    :func:`_serial` holds, else one launch (one work-group, a barrier between steps) where
    its cols x n work-items fit in a work-group, else one launch per step."""
    if serial is not None and _serial(dev):
        serial(dev.queue, (1, 1), None, *head, 0, t_len, *tail)
        return
    limits = _GROUP_LIMITS.get(dev.index)
    if limits is None:
        sizes = dev.device.max_work_item_sizes
        limits = _GROUP_LIMITS[dev.index] = (dev.max_group, sizes[0], sizes[1])
    if _one_launch(dev) and cols * n <= limits[0] and cols <= limits[1] and n <= limits[2]:
        kernel(dev.queue, (cols, n), (cols, n), *head, 0, t_len, *tail)
        return
    for t in (reversed(range(t_len)) if backward else range(t_len)):
        kernel(dev.queue, (cols, n), None, *head, t, t + 1, *tail)


def _previous(h0: CLArray, out: CLArray) -> CLArray:
    """(T * N, H) contiguous: the state each step starts from (h0, then out[:-1])."""
    t_len, n, hid = out.shape
    dev = out.dev
    prev = dev.empty((t_len * n, hid), out.dtype)
    item = np.dtype(out.dtype).itemsize
    step = n * hid * item
    queue = dev.queue
    cl().enqueue_copy(queue, prev.data, h0.data, byte_count=step,
                      src_offset=h0.offset * item, dst_offset=0)
    if t_len > 1:
        cl().enqueue_copy(queue, prev.data, out.data, byte_count=(t_len - 1) * step,
                          src_offset=out.offset * item, dst_offset=step)
    return prev


def _projection(x: CLArray, w: CLArray) -> CLArray:
    """x (T, N, I) @ w^T as a contiguous (T * N, G) array: one GEMM for every step."""
    return _dense0(_matmul(_flat(misc.contiguous(x)), _t(w)))


def _last_product(d: CLArray, w: CLArray, base, n: int, hid: int) -> CLArray:
    """base + d[0] @ w: (N, H), d[0] the first (N, G) rows of d (offset 0), w (G, H)."""
    dev = d.dev
    out = dev.empty((n, hid), d.dtype)
    kernel, cols = _kernel(dev, d.dtype, "k_rec_last", [_I, _I, _I, _I, None, None, None,
                                                         None], hid)
    kernel(dev.queue, (cols, n), None, n, hid, w.shape[0], int(base is not None), d.data,
           w.data, (base if base is not None else out).data, out.data)
    return out


_LSTM = [_I, _I, _I, _I, None, None, _I, None, None, _I, None, _I, None, None, None]
_LSTM_BACK = [_I, _I, _I, _I, _I, None, _I, None, None, None, None, _I, None, None]
_GRU = [_I, _I, _I, _I, None, None, _I, None, None, _I, None, None]
_GRU_BACK = [_I, _I, _I, _I, _I, None, _I, None, None, None, None, _I, None, None, None]


@hookimpl
def lstm_layer(x, h0, c0, w_ih, w_hh, bias):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    dev = x.dev
    xp = _projection(x, w_ih)
    w_t = elementwise.copy(_t(w_hh))  # (H, 4H): each step reads it along 4H
    h0, c0, bias = misc.contiguous(h0), misc.contiguous(c0), misc.contiguous(bias)
    gates = dev.empty((t_len, n, 4 * hid), x.dtype)
    cells = dev.empty((t_len, n, hid), x.dtype)
    out = dev.empty((t_len, n, hid), x.dtype)
    kernel, cols = _kernel(dev, x.dtype, "k_lstm_seq", _LSTM, hid)
    serial = _kernel(dev, x.dtype, "k_lstm_seq1", _LSTM, hid)[0] if _serial(dev) else None
    _sequence(kernel, dev, cols, n, t_len, (n, hid),
              (xp.data, bias.data, bias.offset, w_t.data, h0.data, h0.offset, c0.data,
               c0.offset, gates.data, cells.data, out.data), serial=serial)
    return out, gates, cells


@hookimpl
def lstm_layer_backward(x, h0, c0, w_ih, w_hh, out, gates, cells, grad_out, grad_c,
                        needs_dx):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    dev = x.dev
    w_hh, c0, gates, cells = _dense0(w_hh), misc.contiguous(c0), _dense0(gates), _dense0(cells)
    grad_out = misc.contiguous(grad_out)
    dc = elementwise.copy(grad_c)  # carried in place, dL/dc_t
    da = dev.empty((t_len, n, 4 * hid), x.dtype)
    kernel, cols = _kernel(dev, x.dtype, "k_lstm_seq_back", _LSTM_BACK, hid)
    serial = (_kernel(dev, x.dtype, "k_lstm_seq_back1", _LSTM_BACK, hid)[0] if _serial(dev)
              else None)
    _sequence(kernel, dev, cols, n, t_len, (n, hid),
              (t_len, grad_out.data, grad_out.offset, w_hh.data, gates.data, cells.data,
               c0.data, c0.offset, dc.data, da.data), backward=True, serial=serial)
    dh0 = _last_product(da, w_hh, None, n, hid)
    flat = _flat(da)
    dx = (_matmul(flat, misc.contiguous(w_ih)).view(x.shape, contiguous_strides(x.shape))
          if needs_dx else None)
    dw_ih, dw_hh, dbias = _weight_grads(flat, *(misc.contiguous(a) for a in (x, h0, out)))
    return dx, dh0, dc, dw_ih, dw_hh, dbias


_ROWS = [_I, _I, _I, _I, None, _I, None, _I, None, _I, None]


def _weight_grads(flat: CLArray, x: CLArray, h0: CLArray, out: CLArray) -> tuple:
    """(dW_ih, dW_hh, dbias) of the LSTM's gate gradients ``flat`` (T * N, 4H) in ONE GEMM,
    flat^T @ [x_t, h_{t-1}, 1] (``k_lstm_rows`` builds the right operand), as the cpu
    backend does: two GEMMs and a column sum took ~2x the time (the sum alone a third)."""
    t_len, n, size = x.shape
    hid = h0.shape[1]
    dev = x.dev
    width = size + hid + 1
    rows = dev.empty((t_len * n, width), x.dtype)
    kernel = _kernel(dev, x.dtype, "k_lstm_rows", _ROWS, hid)[0]
    kernel(dev.queue, (rounded(t_len * n, 16),), None, t_len * n, n, size, hid, x.data,
           x.offset, h0.data, h0.offset, out.data, out.offset, rows.data)
    dw = _matmul(_t(flat), rows)  # (4H, width), contiguous

    def columns(start: int, stop: int) -> CLArray:
        return elementwise.copy(dw.view((dw.shape[0], stop - start), (width, 1),
                                        dw.offset + start))

    dbias = columns(width - 1, width)
    return columns(0, size), columns(size, size + hid), dbias.view((dw.shape[0],), (1,))


@hookimpl
def gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    dev = x.dev
    xp = _dense0(elementwise.add(_projection(x, w_ih), b_ih))
    w_t = elementwise.copy(_t(w_hh))  # (H, 3H)
    h0, b_hh = misc.contiguous(h0), misc.contiguous(b_hh)
    saved = dev.empty((t_len, n, 4 * hid), x.dtype)
    out = dev.empty((t_len, n, hid), x.dtype)
    kernel, cols = _kernel(dev, x.dtype, "k_gru_seq", _GRU, hid)
    serial = _kernel(dev, x.dtype, "k_gru_seq1", _GRU, hid)[0] if _serial(dev) else None
    _sequence(kernel, dev, cols, n, t_len, (n, hid),
              (xp.data, b_hh.data, b_hh.offset, w_t.data, h0.data, h0.offset, saved.data,
               out.data), serial=serial)
    return out, saved


@hookimpl
def gru_layer_backward(x, h0, w_ih, w_hh, out, saved, grad_out, needs_dx):
    t_len, n, _ = x.shape
    hid = h0.shape[1]
    dev = x.dev
    w_hh, h0, out, saved = _dense0(w_hh), misc.contiguous(h0), _dense0(out), _dense0(saved)
    grad_out = misc.contiguous(grad_out)
    dh = fill((n, hid), 0, x.dtype, dev)  # carried in place: dL/dh_{t+1} * z_{t+1}
    dp = dev.empty((t_len, n, 3 * hid), x.dtype)
    dq = dev.empty((t_len, n, 3 * hid), x.dtype)
    kernel, cols = _kernel(dev, x.dtype, "k_gru_seq_back", _GRU_BACK, hid)
    serial = (_kernel(dev, x.dtype, "k_gru_seq_back1", _GRU_BACK, hid)[0] if _serial(dev)
              else None)
    _sequence(kernel, dev, cols, n, t_len, (n, hid),
              (t_len, grad_out.data, grad_out.offset, w_hh.data, saved.data, out.data,
               h0.data, h0.offset, dh.data, dp.data, dq.data), backward=True, serial=serial)
    dh0 = _last_product(dq, w_hh, dh, n, hid)
    fp, fq = _flat(dp), _flat(dq)
    dx = (_matmul(fp, misc.contiguous(w_ih)).view(x.shape, contiguous_strides(x.shape))
          if needs_dx else None)
    dw_ih = _matmul(_t(fp), _flat(misc.contiguous(x)))
    dw_hh = _matmul(_t(fq), _previous(h0, out))
    db_ih, db_hh = _sum(fp, (0,), False), _sum(fq, (0,), False)
    return dx, dh0, dw_ih, dw_hh, db_ih, db_hh
