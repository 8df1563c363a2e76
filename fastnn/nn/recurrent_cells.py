"""One step of the recurrent cells, and RNNCell, LSTMCell and GRUCell, as PyTorch's.

Each step takes the input's projection ``x_proj = x W_ih^T + b_ih`` (computed for a whole
sequence at once by the layers, or for one step by a cell) and the previous state:

    RNN:  h' = act(x_proj + W_hh h + b_hh),  act = tanh or relu
    LSTM: i, f, g, o = sigma, sigma, tanh, sigma of (x_proj + W_hh h + b_hh) (rows i, f, g, o)
          c' = f * c + i * g,   h' = o * tanh(c')   (then h' W_hr^T with a projection)
    GRU:  r, z = sigma(x_proj{r,z} + W_h{r,z} h + b_h{r,z})   (rows r, z, n)
          n = tanh(x_proj_n + r * (W_hn h + b_hn)),   h' = (1 - z) * n + z * h

:func:`step` is the one place of this math: the layers (:mod:`fastnn.nn.recurrent`) and the
cells here call it, so a fused backend path replaces it in one place.

Cells: ``weight_ih`` (G*H, in), ``weight_hh`` (G*H, H), ``bias_ih``, ``bias_hh`` (G*H,), all
U(-1/sqrt(H), 1/sqrt(H)); input (N, in) or (in,), state (N, H) or (H,), zero if not given.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.nn.module import Module, check_tensor, tape_reverse, uniform_init
from fastnn.ops import activations, joining, movement, nnops
from fastnn.ops import elementwise as m
from fastnn.ops.tensor import full

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def step(mode: str, x_proj, state, w_hh, b_hh, w_hr=None):
    """The next state of cell ``mode`` (a key of :data:`GATES`) from one step's input
    projection ``x_proj`` (N, G*H) and ``state`` (h, or (h, c) for LSTM)."""
    if mode == "LSTM":
        h, c = state
        gates = m.add(x_proj, nnops.linear(h, w_hh, b_hh))
        size = c.shape[-1]
        i, f, _, o = joining.chunk(activations.sigmoid(gates), 4, -1)  # one sigmoid, g unused
        g = activations.tanh(gates[..., 2 * size:3 * size])
        c = m.add(m.mul(f, c), m.mul(i, g))
        h = m.mul(o, activations.tanh(c))
        return (h if w_hr is None else nnops.linear(h, w_hr)), c
    if mode == "GRU":
        i_r, i_z, i_n = joining.chunk(x_proj, 3, -1)
        h_r, h_z, h_n = joining.chunk(nnops.linear(state, w_hh, b_hh), 3, -1)
        r = activations.sigmoid(m.add(i_r, h_r))
        z = activations.sigmoid(m.add(i_z, h_z))
        n = activations.tanh(m.add(i_n, m.mul(r, h_n)))
        return m.add(n, m.mul(z, m.sub(state, n)))  # (1 - z) n + z h
    pre = m.add(x_proj, nnops.linear(state, w_hh, b_hh))
    return activations.relu(pre) if mode == "RNN_RELU" else activations.tanh(pre)


def rnn_mode(owner: str, nonlinearity) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"{owner}: nonlinearity must be 'tanh' or 'relu', got "
                         f"{nonlinearity!r}")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class _Cell(Module):
    MODE = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None,
                 device=None):
        super().__init__()
        name = type(self).__name__
        self.input_size = integer(name, "input_size", input_size)
        self.hidden_size = integer(name, "hidden_size", hidden_size)
        self.bias = bool(bias)
        rows, bound = GATES[self.MODE] * self.hidden_size, 1.0 / math.sqrt(self.hidden_size)
        self.weight_ih = uniform_init((rows, self.input_size), bound, "connective", dtype,
                                      device)
        self.weight_hh = uniform_init((rows, self.hidden_size), bound, "connective", dtype,
                                      device)
        if self.bias:
            self.bias_ih = uniform_init((rows,), bound, "bias", dtype, device)
            self.bias_hh = uniform_init((rows,), bound, "bias", dtype, device)
        else:
            self.bias_ih = self.bias_hh = None

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")

    def _hidden(self, x, given, what):
        """``given`` checked against x, or zeros; shaped (N, H), or (H,) for an unbatched x."""
        name = type(self).__name__
        want = x.shape[:-1] + (self.hidden_size,)
        if given is None:
            return full(want, 0.0, x.dtype, x.device)
        check_tensor(name, given)
        if given.shape != want:
            raise ValueError(f"{name}: {what} must have shape {want} for input {x.shape}, got "
                             f"{given.shape}")
        if given.dtype != x.dtype:
            raise TypeError(f"{name}: {what} is {given.dtype.name} but the input is "
                            f"{x.dtype.name}; convert it with {what}.to(x.dtype)")
        return given

    def _project(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input must be (N, {self.input_size}) or "
                             f"({self.input_size},), got {x.shape}")
        return nnops.linear(x, self.weight_ih, self.bias_ih)


class RNNCell(_Cell):
    """An Elman cell, ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``, act tanh or relu;
    ``forward(input, hx=None) -> h'``."""

    MODE = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", dtype=None, device=None):
        mode = rnn_mode("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, dtype, device)
        self.MODE, self.nonlinearity = mode, nonlinearity

    def extra_repr(self) -> str:
        extra = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity}"
        return super().extra_repr() + extra

    def forward(self, input, hx=None):
        x_proj = self._project(input)
        return step(self.MODE, x_proj, self._hidden(input, hx, "hx"), self.weight_hh,
                    self.bias_hh)


class GRUCell(_Cell):
    """A gated recurrent unit cell; ``forward(input, hx=None) -> h'``."""

    MODE = "GRU"

    def forward(self, input, hx=None):
        x_proj = self._project(input)
        return step("GRU", x_proj, self._hidden(input, hx, "hx"), self.weight_hh, self.bias_hh)


class LSTMCell(_Cell):
    """A long short-term memory cell; ``forward(input, (h, c)=None) -> (h', c')``.

    ``reverse(x, grad_out)`` takes the gradient of h' only."""

    MODE = "LSTM"

    def forward(self, input, hx=None):
        x_proj = self._project(input)
        if hx is None:
            hx = (None, None)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError("LSTMCell: hx must be a tuple (h, c) of two tensors")
        state = (self._hidden(input, hx[0], "h"), self._hidden(input, hx[1], "c"))
        return step("LSTM", x_proj, state, self.weight_hh, self.bias_hh)

    def reverse(self, x, grad_out):
        """dL/dx and dL/dparams for dL/dh', from the tape."""
        return tape_reverse(self, lambda t: self(t)[0], x, grad_out)


def unsqueeze_state(hx):
    """An unbatched state (layers, H) as (layers, 1, H); a tuple element by element."""
    if hx is None:
        return None
    if isinstance(hx, (tuple, list)):
        return tuple(unsqueeze_state(h) for h in hx)
    if hx.ndim != 2:
        raise ValueError(f"the initial state of an unbatched (L, in) input must be 2-d "
                         f"(layers * directions, H), got {hx.shape}")
    return movement.reshape(hx, (hx.shape[0], 1, hx.shape[1]))
