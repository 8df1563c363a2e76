"""Work arrays and row layouts shared by the cpu backend's fused recurrent layers
(:mod:`fastnn_cpu.recurrent`): the per-thread reused work arrays and the GRU's rows
[x_t, h_{t-1}, 1] of every step."""

from __future__ import annotations

import threading

import numpy as np

_SCRATCH = threading.local()


def scratch(name, shape, dtype):
    """A work array of this thread's, reused from call to call (never returned): fresh
    (T, N, 4H) work arrays every step cost the LSTM step ~1,600 page faults (4 ms of
    system time on a 10 ms step) as the allocator gave the freed memory back to the
    system and took it again (and the NumPy floor run after it in the same process then
    faulted as much); PyTorch's step faults none."""
    kept = _SCRATCH.__dict__
    a = kept.get(name)
    if a is None or a.shape != shape or a.dtype != dtype:
        a = kept[name] = np.empty(shape, dtype)
    return a


def flat_rows(a):
    """``a`` as rows: (prod of the leading axes, last axis)."""
    return a.reshape(-1, a.shape[-1])


def previous(seq, first, start, stop):
    """seq[start - 1:stop - 1] with ``first`` before seq[0] (the state before each step)."""
    if start:
        return seq[start - 1:stop - 1]
    return np.concatenate([np.asarray(first, seq.dtype)[None], seq[:stop - 1]])


def step_rows(x, h0):
    """(T + 1, N, I + H + 1): step t's row is [x_t, h_{t-1}, 1], h0 in step 0's; a forward
    writes h_t into step t + 1's h slot (the last row's x slot is zeros). One GEMM of a
    row with [W_ih^T; W_hh^T; b] is a step's whole pre-activation (14 us at K = 81 where
    the GEMM at K = 64, its add to the input projection and that projection's share took
    19), and the rows of all steps are the weight gradients' right operand."""
    t_len, n, size = x.shape
    rows = np.empty((t_len + 1, n, size + h0.shape[1] + 1), x.dtype)
    rows[:t_len, :, :size] = x
    rows[t_len, :, :size] = 0
    rows[0, :, size:-1] = h0
    rows[..., -1] = 1
    return rows


def own_base(view, shape, index):
    """``view``'s base when it has ``shape`` and ``view`` is exactly ``base[index]`` (so
    this module's forward made it), else None."""
    base = view.base
    if not isinstance(base, np.ndarray) or base.shape != shape or base.dtype != view.dtype:
        return None
    mine = base[index]
    if mine.strides != view.strides or mine.ctypes.data != view.ctypes.data:
        return None
    return base


def own_rows(out, x):
    """The rows behind ``out`` when this module's forward over ``x`` made it, else None."""
    t_len, n, size = x.shape
    return own_base(out, (t_len + 1, n, size + out.shape[2] + 1),
                     (slice(1, None), slice(None), slice(size, -1)))
