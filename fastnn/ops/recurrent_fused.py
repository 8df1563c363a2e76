"""A whole LSTM or GRU layer over a sequence as one tape node, through the fused hooks
``lstm_layer``/``gru_layer`` (and their backward hooks): the input projection of every
step is one GEMM, and a backend may run the whole recurrence as one kernel. ``nn.LSTM``
and ``nn.GRU`` use it where a layer needs nothing else (no ``proj_size``, no packed
sequence); the step-by-step tape of :mod:`fastnn.nn.recurrent_cells` is the rest.

The node's output packs what the layer's callers read: for LSTM ``(T + 1, N, H)`` = every
step's h, then the last c; for GRU ``(T, N, H)``. Its rules (``lstm_sequence``,
``gru_sequence``) call the backward hooks with the arrays the forward saved.
"""

from __future__ import annotations

from fastnn.autograd.engine import attach
from fastnn.ops.tensor import Tensor


def _zeros(ops, like, rows):
    """The raw (rows,) zero bias of a layer without bias, in ``like``'s dtype and device."""
    return ops.full((rows,), 0.0, like._dtype.name, like._device.index)


def lstm_sequence(x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(out (T, N, H), h_T, c_T)`` of one LSTM layer; x (T, N, I), h0 and c0 (N, H)."""
    ops = x._device.ops
    bias = (_zeros(ops, x, w_ih.shape[0]) if b_ih is None
            else ops.add(b_ih._data, b_hh._data))  # PyTorch's two biases, summed
    out, gates, cells = ops.lstm_layer(x._data, h0._data, c0._data, w_ih._data, w_hh._data,
                                       bias)
    steps = x.shape[0]
    last_c = ops.slice(cells, (steps - 1, 0, 0), cells.shape, (1, 1, 1))
    packed = Tensor._make(ops.cat([out, last_c], 0), x._dtype, x._device)
    inputs = (x, h0, c0, w_ih, w_hh) + ((b_ih, b_hh) if b_ih is not None else ())
    saved = (x._data, h0._data, c0._data, w_ih._data, w_hh._data, out, gates, cells)
    packed = attach(packed, "lstm_sequence", inputs, saved)
    return packed[:steps], packed[steps - 1], packed[steps]


def gru_sequence(x, h0, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(out (T, N, H), h_T)`` of one GRU layer; x (T, N, I), h0 (N, H)."""
    ops = x._device.ops
    if b_ih is None:
        bi = bh = _zeros(ops, x, w_ih.shape[0])
    else:
        bi, bh = b_ih._data, b_hh._data
    out, saved = ops.gru_layer(x._data, h0._data, w_ih._data, w_hh._data, bi, bh)
    inputs = (x, h0, w_ih, w_hh) + ((b_ih, b_hh) if b_ih is not None else ())
    result = attach(Tensor._make(out, x._dtype, x._device), "gru_sequence", inputs,
                    (x._data, h0._data, w_ih._data, w_hh._data, out, saved))
    return result, result[x.shape[0] - 1]
