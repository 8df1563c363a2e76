"""One step of the recurrent cells, and RNNCell, LSTMCell and GRUCell, as PyTorch's.

One step, from the input x and the previous state:

    RNN:  h' = act(W_ih x + b_ih + W_hh h + b_hh),  act = tanh or relu
    LSTM: i, f, g, o = sigma, sigma, tanh, sigma of (W_ih x + b_ih + W_hh h + b_hh) (rows
          i, f, g, o);  c' = f * c + i * g,   h' = o * tanh(c')   (then W_hr h' with proj_size)
    GRU:  r, z = sigma(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})   (rows r, z, n)
          n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),   h' = (1 - z) * n + z * h

:func:`step` is the one place of this math: the layers (:mod:`fastnn.nn.recurrent`) and the
cells here call it, so a fused backend path replaces it in one place.

Cells: ``weight_ih`` (G*H, in), ``weight_hh`` (G*H, H), ``bias_ih``, ``bias_hh`` (G*H,), all
U(-1/sqrt(H), 1/sqrt(H)); input (N, in) or (in,), state (N, H) or (H,), zero if not given.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.nn import init
from fastnn.nn.module import Module, check_tensor, tape_reverse, uniform_init
from fastnn.ops import activations, autocasting, joining, movement, nnops
from fastnn.ops import elementwise as m
from fastnn.ops.tensor import full

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def prepare(mode: str, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None) -> tuple:
    """The weights of :func:`step` for a whole sequence: for RNN and LSTM one (G*H, in + H')
    matrix [W_ih, W_hh] and one bias b_ih + b_hh, so that a step is ONE product of [x, h]
    (a tape of a few nodes a step); for GRU (whose n gate needs W_hn h apart) as given."""
    if mode == "GRU":
        return (w_ih, w_hh, b_ih, b_hh)
    bias = None if b_ih is None else m.add(b_ih, b_hh)
    return (joining.cat([w_ih, w_hh], 1), bias, w_hr)


def step(mode: str, x, state, weights):
    """The next state of cell ``mode`` (a key of :data:`GATES`) from one step's input ``x``
    (N, in) and ``state`` (h, or (h, c) for LSTM), ``weights`` from :func:`prepare`."""
    if mode == "GRU":
        w_ih, w_hh, b_ih, b_hh = weights
        i_r, i_z, i_n = joining.chunk(nnops.linear(x, w_ih, b_ih), 3, -1)
        h_r, h_z, h_n = joining.chunk(nnops.linear(state, w_hh, b_hh), 3, -1)
        r = activations.sigmoid(m.add(i_r, h_r))
        z = activations.sigmoid(m.add(i_z, h_z))
        n = activations.tanh(m.add(i_n, m.mul(r, h_n)))
        return m.add(n, m.mul(z, m.sub(state, n)))  # (1 - z) n + z h
    weight, bias, w_hr = weights
    h = state[0] if mode == "LSTM" else state
    pre = nnops.linear(joining.cat([x, h], x.ndim - 1), weight, bias)
    if mode == "RNN_TANH":
        return activations.tanh(pre)
    if mode == "RNN_RELU":
        return activations.relu(pre)
    c = state[1]
    size = c.shape[-1]
    i, f, _, o = joining.chunk(activations.sigmoid(pre), 4, -1)  # one sigmoid, g's unused
    g = activations.tanh(pre[..., 2 * size:3 * size])
    c = m.add(m.mul(f, c), m.mul(i, g))
    h = m.mul(o, activations.tanh(c))
    return (h if w_hr is None else nnops.linear(h, w_hr)), c


def rnn_mode(owner: str, nonlinearity) -> str:
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"{owner}: nonlinearity must be 'tanh' or 'relu', got "
                         f"{nonlinearity!r}")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


def reset_uniform(layer) -> None:
    """PyTorch's reset of a recurrent layer or cell: each of its parameters drawn from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in place."""
    bound = 1.0 / math.sqrt(layer.hidden_size) if layer.hidden_size > 0 else 0.0
    for param in layer.parameters():
        init.uniform_(param, -bound, bound)


class _Cell(Module):
    MODE = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
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

    def reset_parameters(self) -> None:
        """Every parameter drawn again, in place, as at construction (PyTorch's)."""
        reset_uniform(self)

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

    def _check(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input must be (N, {self.input_size}) or "
                             f"({self.input_size},), got {x.shape}")

    def _step(self, x, state):
        weights = prepare(self.MODE, self.weight_ih, self.weight_hh, self.bias_ih,
                          self.bias_hh)
        return step(self.MODE, x, state, weights)


class RNNCell(_Cell):
    """An Elman cell, ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``, act tanh or relu;
    ``forward(input, hx=None) -> h'``."""

    MODE = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        mode = rnn_mode("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, dtype=dtype, device=device)
        self.MODE, self.nonlinearity = mode, nonlinearity

    def extra_repr(self) -> str:
        extra = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity}"
        return super().extra_repr() + extra

    def forward(self, input, hx=None):
        self._check(input)
        if autocasting.state.on:  # PyTorch's cell kernels autocast on cuda
            input, hx = autocasting.cast_args("recurrent", input, hx)
        return self._step(input, self._hidden(input, hx, "hx"))


class GRUCell(_Cell):
    """A gated recurrent unit cell; ``forward(input, hx=None) -> h'``."""

    MODE = "GRU"

    def forward(self, input, hx=None):
        self._check(input)
        if autocasting.state.on:  # PyTorch's cell kernels autocast on cuda
            input, hx = autocasting.cast_args("recurrent", input, hx)
        return self._step(input, self._hidden(input, hx, "hx"))


class LSTMCell(_Cell):
    """A long short-term memory cell; ``forward(input, (h, c)=None) -> (h', c')``.

    ``reverse(x, grad_out)`` takes the gradient of h' only."""

    MODE = "LSTM"

    def forward(self, input, hx=None):
        self._check(input)
        if autocasting.state.on:  # PyTorch's cell kernels autocast on cuda
            input, hx = autocasting.cast_args("recurrent", input, hx)
        if hx is None:
            hx = (None, None)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError("LSTMCell: hx must be a tuple (h, c) of two tensors")
        state = (self._hidden(input, hx[0], "h"), self._hidden(input, hx[1], "c"))
        return self._step(input, state)

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


RNNCellBase = _Cell
"""The base class of RNNCell, LSTMCell and GRUCell, under PyTorch's name."""
