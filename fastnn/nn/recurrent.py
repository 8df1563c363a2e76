"""LSTM and GRU, as PyTorch's: parameter names, gate order, init, shapes and initial state.

LSTM (gates i, f, g, o, stacked in that order in the 4H rows of each weight):

    i, f, g, o = sigma, sigma, tanh, sigma of (W_ih x + b_ih + W_hh h + b_hh)
    c' = f * c + i * g,   h' = o * tanh(c')

GRU (gates r, z, n in the 3H rows; the hidden bias of n sits inside r * (...)):

    r, z = sigma(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),   h' = (1 - z) * n + z * h

Parameters ``weight_ih_l{k}`` (G*H, in), ``weight_hh_l{k}`` (G*H, H), ``bias_ih_l{k}``,
``bias_hh_l{k}`` (G*H,), and the same with ``_reverse`` for the backward direction; all
start U(-1/sqrt(H), 1/sqrt(H)). Input (L, N, in), (N, L, in) with ``batch_first`` or
(L, in); output (L, N, D*H) and h_n (D*layers, N, H) (LSTM: (h_n, c_n)).

The time loop runs on the tape; ``reverse(x, grad_out)`` takes the gradient of the output
sequence only (none through the final state) and comes from the tape.
"""

from __future__ import annotations

import math

from fastnn.api.args import integer
from fastnn.nn.module import Module, check_tensor, tape_reverse, uniform_init
from fastnn.ops import activations, joining, movement, nnops
from fastnn.ops import elementwise as m
from fastnn.ops.tensor import full, rand


class _Recurrent(Module):
    GATES = 1
    MODE = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype=None, device=None):
        super().__init__()
        name = type(self).__name__
        self.input_size = integer(name, "input_size", input_size)
        self.hidden_size = integer(name, "hidden_size", hidden_size)
        self.num_layers = integer(name, "num_layers", num_layers)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"{name}: dropout must be in [0, 1), got {dropout}")
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        directions = 2 if bidirectional else 1
        rows, bound = self.GATES * self.hidden_size, 1.0 / math.sqrt(self.hidden_size)
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else self.hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                key = f"l{layer}{suffix}"
                setattr(self, f"weight_ih_{key}",
                        uniform_init((rows, width), bound, "connective", dtype, device))
                setattr(self, f"weight_hh_{key}",
                        uniform_init((rows, self.hidden_size), bound, "connective", dtype, device))
                if self.bias:
                    setattr(self, f"bias_ih_{key}",
                            uniform_init((rows,), bound, "bias", dtype, device))
                    setattr(self, f"bias_hh_{key}",
                            uniform_init((rows,), bound, "bias", dtype, device))

    def extra_repr(self) -> str:
        extra = "" if self.num_layers == 1 else f", num_layers={self.num_layers}"
        for flag in ("batch_first", "bidirectional"):
            if getattr(self, flag):
                extra += f", {flag}=True"
        if not self.bias:
            extra += ", bias=False"
        return f"{self.input_size}, {self.hidden_size}{extra}"

    def _weights(self, key):
        get = self._parameters.get
        return (get(f"weight_ih_{key}"), get(f"weight_hh_{key}"), get(f"bias_ih_{key}"),
                get(f"bias_hh_{key}"))

    def _check_input(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(N, L, in)" if self.batch_first else "(L, N, in)"
            raise ValueError(f"{name}: input must be {layout} or (L, in) with in = "
                             f"input_size = {self.input_size}, got {x.shape}")
        length = x.shape[1 if self.batch_first and x.ndim == 3 else 0]
        if not length:
            raise ValueError(f"{name}: the input of shape {x.shape} has a sequence length of "
                             f"0; an RNN needs at least one step (as PyTorch's)")

    def _initial(self, state, batch, like, what):
        """The initial state as a list of (N, H), one per layer and direction."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        if state is None:
            zero = full((batch, self.hidden_size), 0.0, like.dtype, like.device)
            return [zero] * count
        want = (count, batch, self.hidden_size)
        if state.shape != want:
            raise ValueError(f"{type(self).__name__}: {what} must have shape {want}, got "
                             f"{state.shape}")
        if state.dtype != like.dtype:  # it would silently compute in the wider dtype
            raise TypeError(f"{type(self).__name__}: {what} is {state.dtype.name} but the "
                            f"input is {like.dtype.name}; give them one dtype, e.g. "
                            f"{what}.to(x.dtype)")
        return list(joining.unbind(state, 0))

    def forward(self, x, hx=None):
        self._check_input(x)
        unbatched = x.ndim == 2
        if unbatched:
            x = movement.reshape(x, (x.shape[0], 1, x.shape[1]))
            hx = _unsqueeze_state(hx)
        elif self.batch_first:
            x = movement.transpose(x, (1, 0, 2))
        states = self._initial_states(hx, x.shape[1], x)
        directions = 2 if self.bidirectional else 1
        # NOTE: the sequence goes between layers as a list of steps, never re-sliced: the
        # gradient of each slice of a (L, ...) tensor is scattered into a zero (L, ...)
        # array, which for L steps costs L times the sequence
        steps = list(joining.unbind(x, 0))
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                steps = [_dropout(s, self.dropout) for s in steps]
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                hs, final = self._run(steps[::-1] if d else steps,
                                      states[layer * directions + d],
                                      self._weights(f"l{layer}{suffix}"))
                outs.append(hs[::-1] if d else hs)
                finals.append(final)
            steps = outs[0] if directions == 1 else [joining.cat(pair, 1)
                                                     for pair in zip(*outs)]
        x = joining.stack(steps, 0)
        if unbatched:
            x = movement.reshape(x, (x.shape[0], x.shape[2]))
        elif self.batch_first:
            x = movement.transpose(x, (1, 0, 2))
        return x, self._final_state(finals, unbatched)

    def reverse(self, x, grad_out):
        """dL/dx and dL/dparams for dL/d(output sequence), from the tape."""
        return tape_reverse(self, lambda t: self(t)[0], x, grad_out)


def _unsqueeze_state(hx):
    if hx is None:
        return None
    if isinstance(hx, tuple):
        return tuple(_unsqueeze_state(h) for h in hx)
    return movement.reshape(hx, (hx.shape[0], 1, hx.shape[1]))


def _stack_state(parts, unbatched):
    state = joining.stack(parts, 0)
    if unbatched:
        state = movement.reshape(state, (state.shape[0], state.shape[2]))
    return state


def _dropout(x, p):
    keep = rand(x.shape, dtype=x.dtype, device=x.device) >= p
    return m.mul(x, m.mul(keep.astype(x.dtype), 1.0 / (1.0 - p)))


class LSTM(_Recurrent):
    """Long short-term memory; ``forward(x, (h_0, c_0)=None) -> (output, (h_n, c_n))``."""

    GATES = 4

    def _initial_states(self, hx, batch, like):
        if hx is None:
            hx = (None, None)
        if not isinstance(hx, tuple) or len(hx) != 2:
            raise TypeError("LSTM: the initial state must be a tuple (h_0, c_0)")
        return list(zip(self._initial(hx[0], batch, like, "h_0"),
                        self._initial(hx[1], batch, like, "c_0")))

    def _run(self, steps, state, weights):
        """Hidden states of each step and the final (h, c).

        One product per step: [x_t, h] @ [W_ih, W_hh]^T + (b_ih + b_hh), and one sigmoid
        over all four gates (g's part unused), which keeps the tape short.
        """
        h, c = state
        w_ih, w_hh, b_ih, b_hh = weights
        weight = joining.cat([w_ih, w_hh], 1)
        bias = None if b_ih is None else m.add(b_ih, b_hh)
        size = self.hidden_size
        hs = []
        for x in steps:
            gates = nnops.linear(joining.cat([x, h], 1), weight, bias)
            i, f, _, o = joining.chunk(activations.sigmoid(gates), 4, 1)
            g = activations.tanh(gates[:, 2 * size:3 * size])
            c = m.add(m.mul(f, c), m.mul(i, g))
            h = m.mul(o, activations.tanh(c))
            hs.append(h)
        return hs, (h, c)

    def _final_state(self, finals, unbatched):
        return (_stack_state([h for h, _ in finals], unbatched),
                _stack_state([c for _, c in finals], unbatched))


class GRU(_Recurrent):
    """Gated recurrent unit; ``forward(x, h_0=None) -> (output, h_n)``."""

    GATES = 3

    def _initial_states(self, hx, batch, like):
        return self._initial(hx, batch, like, "h_0")

    def _run(self, steps, h, weights):
        """Hidden states of each step and the final h."""
        w_ih, w_hh, b_ih, b_hh = weights
        hs = []
        for x in steps:
            i_r, i_z, i_n = joining.chunk(nnops.linear(x, w_ih, b_ih), 3, 1)
            h_r, h_z, h_n = joining.chunk(nnops.linear(h, w_hh, b_hh), 3, 1)
            r = activations.sigmoid(m.add(i_r, h_r))
            z = activations.sigmoid(m.add(i_z, h_z))
            n = activations.tanh(m.add(i_n, m.mul(r, h_n)))
            h = m.add(n, m.mul(z, m.sub(h, n)))  # (1 - z) n + z h
            hs.append(h)
        return hs, h

    def _final_state(self, finals, unbatched):
        return _stack_state(finals, unbatched)
