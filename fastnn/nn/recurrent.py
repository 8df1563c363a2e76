"""RNN, LSTM and GRU, as PyTorch's: parameter names, gate order, init, shapes and state.

The cell math of one step is :func:`fastnn.nn.recurrent_cells.step` (equations there).
Parameters ``weight_ih_l{k}`` (G*H, in), ``weight_hh_l{k}`` (G*H, H), ``bias_ih_l{k}``,
``bias_hh_l{k}`` (G*H,), with LSTM's ``proj_size`` P also ``weight_hr_l{k}`` (P, H) (and
``weight_hh_l{k}`` (4H, P)), the same with ``_reverse`` for the backward direction; all
start U(-1/sqrt(H), 1/sqrt(H)). Input (L, N, in), (N, L, in) with ``batch_first`` or
(L, in) or a :class:`~fastnn.nn.utils.rnn.PackedSequence` (then the output is one too);
output (L, N, D*H') and h_n (D*layers, N, H') with H' = P or H (LSTM: (h_n, c_n),
c_n (D*layers, N, H)). Between layers, in training, dropout with probability ``dropout``.

The time loop runs on the tape. ``reverse(x, grad_out)`` takes the gradient of the output
sequence only (none through the final state) and comes from the tape.
"""

from __future__ import annotations

import math
import warnings

from fastnn.api.args import integer
from fastnn.api.errors import ShapeError
from fastnn.nn.module import Module, check_tensor, tape_reverse, uniform_init
from fastnn.nn.recurrent_cells import (
    GATES,
    prepare,
    reset_uniform,
    rnn_mode,
    step,
    unsqueeze_state,
)
from fastnn.nn.utils.rnn import PackedSequence
from fastnn.ops import autocasting, gathering, joining, movement, shaping
from fastnn.ops import elementwise as m
from fastnn.ops.recurrent_fused import gru_sequence, lstm_sequence
from fastnn.ops.tensor import full, rand


class _Recurrent(Module):
    MODE = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        self.input_size = integer(name, "input_size", input_size)
        self.hidden_size = integer(name, "hidden_size", hidden_size)
        self.num_layers = integer(name, "num_layers", num_layers)
        self.proj_size = integer(name, "proj_size", proj_size, 0)
        if self.proj_size >= self.hidden_size:
            raise ValueError(f"{name}: proj_size must be smaller than hidden_size "
                             f"({hidden_size}), got {proj_size}")
        if isinstance(dropout, bool) or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if dropout > 0 and self.num_layers == 1:
            warnings.warn(f"{name}: dropout acts between layers, so dropout={dropout} with "
                          f"num_layers=1 does nothing (as PyTorch)", UserWarning, stacklevel=2)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        directions = 2 if bidirectional else 1
        out = self.proj_size or self.hidden_size
        rows, bound = GATES[self.MODE] * self.hidden_size, 1.0 / math.sqrt(self.hidden_size)
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else out * directions
            for suffix in ("", "_reverse")[:directions]:
                key = f"l{layer}{suffix}"
                shapes = [("weight_ih", (rows, width), "connective"),
                          ("weight_hh", (rows, out), "connective")]
                if self.bias:
                    shapes += [("bias_ih", (rows,), "bias"), ("bias_hh", (rows,), "bias")]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size),
                                   "connective"))
                for what, shape, kind in shapes:
                    setattr(self, f"{what}_{key}", uniform_init(shape, bound, kind, dtype,
                                                                device))

    def extra_repr(self) -> str:
        extra = f", proj_size={self.proj_size}" if self.proj_size else ""  # (PyTorch's order)
        if self.num_layers != 1:
            extra += f", num_layers={self.num_layers}"
        if not self.bias:
            extra += ", bias=False"
        if self.batch_first:
            extra += ", batch_first=True"
        if self.dropout:
            extra += f", dropout={self.dropout}"
        if self.bidirectional:
            extra += ", bidirectional=True"
        return f"{self.input_size}, {self.hidden_size}{extra}"

    @property
    def mode(self) -> str:
        """PyTorch's name of the cell: 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'."""
        return self.MODE

    def reset_parameters(self) -> None:
        """Every parameter drawn again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)),
        in place, as PyTorch's (the parameters a script registered on the layer too)."""
        reset_uniform(self)

    def flatten_parameters(self) -> None:
        """PyTorch's cuDNN weight compaction; nothing to do here (accepted so scripts run)."""

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, in PyTorch's order, as lists."""
        keys = [f"l{layer}{suffix}" for layer in range(self.num_layers)
                for suffix in ("", "_reverse")[:2 if self.bidirectional else 1]]
        return [[p for p in self._weights(key) if p is not None] for key in keys]

    def _weights(self, key):
        # NOTE: the attributes, not _parameters: as PyTorch's _flat_weights follow setattr,
        # a script may swap a weight for a computed tensor (AWD-LSTM's WeightDrop deletes
        # the parameter and sets dropout(raw) before each forward)
        return tuple(getattr(self, f"{what}_{key}", None)
                     for what in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))

    def _check_input(self, x):
        name = type(self).__name__
        check_tensor(name, x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            layout = "(N, L, in)" if self.batch_first else "(L, N, in)"
            raise ShapeError(f"{name}: input must be {layout} or (L, in) with in = "
                             f"input_size = {self.input_size}, got {x.shape}")
        weight = self.weight_ih_l0
        if not x.dtype.is_floating:  # Module.__call__ checks floating inputs only
            raise TypeError(f"{name}: input is {x.dtype.name} but the layer's parameters are "
                            f"{weight.dtype.name}; convert the input with "
                            f"x.to(fnn.{weight.dtype.name})")
        length = x.shape[1 if self.batch_first and x.ndim == 3 else 0]
        if not length:
            raise ValueError(f"{name}: the input of shape {x.shape} has a sequence length of "
                             f"0; an RNN needs at least one step (as PyTorch's)")

    def _initial(self, state, batch, like, what, size):
        """The initial state as a list of (N, size), one per layer and direction."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        if state is None:
            return [full((batch, size), 0.0, like.dtype, like.device)] * count
        check_tensor(type(self).__name__, state)
        want = (count, batch, size)
        if state.shape != want:
            raise ShapeError(f"{type(self).__name__}: {what} must have shape {want}, got "
                             f"{state.shape}")
        if state.dtype != like.dtype:  # it would silently compute in the wider dtype
            raise TypeError(f"{type(self).__name__}: {what} is {state.dtype.name} but the "
                            f"input is {like.dtype.name}; give them one dtype, e.g. "
                            f"{what}.to(x.dtype)")
        return list(joining.unbind(state, 0))

    def _initial_states(self, hx, batch, like):
        return self._initial(hx, batch, like, "h_0", self.hidden_size)

    def forward(self, x, hx=None):
        if isinstance(x, PackedSequence):
            return self._forward_packed(x, hx)
        self._check_input(x)
        if autocasting.state.on:  # PyTorch's cuDNN RNN autocasts on cuda (not on cpu)
            x, hx = autocasting.cast_args("recurrent", x, hx)
        unbatched = x.ndim == 2
        if unbatched:
            x = movement.reshape(x, (x.shape[0], 1, x.shape[1]))
            hx = unsqueeze_state(hx)
        elif self.batch_first:
            x = movement.transpose(x, (1, 0, 2))
        states = self._initial_states(hx, x.shape[1], x)
        if self.MODE in ("LSTM", "GRU") and not self.proj_size:
            x, finals = self._fused_layers(x, states)
        else:
            steps, finals = self._layers(list(joining.unbind(x, 0)),
                                         [x.shape[1]] * x.shape[0], states)
            x = joining.stack(steps, 0)
        if unbatched:
            x = movement.reshape(x, (x.shape[0], x.shape[2]))
        elif self.batch_first:
            x = movement.transpose(x, (1, 0, 2))
        return x, self._final_state(finals, unbatched)

    def _forward_packed(self, packed, hx):
        """A PackedSequence in, one out; h_n at each sequence's last frame, in the batch's
        own order (PyTorch's)."""
        name = type(self).__name__
        data = check_tensor(name, packed.data)
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise ValueError(f"{name}: a packed input's data must be (frames, "
                             f"{self.input_size}), got {data.shape}")
        weight = self.weight_ih_l0
        if data.dtype is not weight.dtype:  # as Module.__call__ checks a plain input
            raise TypeError(f"{name}: the packed data is {data.dtype.name} but the layer's "
                            f"parameters are {weight.dtype.name}; convert one with .to()")
        sizes = [int(n) for n in packed.batch_sizes.numpy()]
        if packed.sorted_indices is not None and hx is not None:
            hx = _permute(hx, packed.sorted_indices)
        states = self._initial_states(hx, sizes[0], data)
        steps, finals = self._layers(list(joining.split(data, sizes, 0)), sizes, states)
        final = self._final_state(finals, False)
        if packed.unsorted_indices is not None:
            final = _permute(final, packed.unsorted_indices)
        return packed._replace(data=joining.cat(steps, 0)), final

    def _layers(self, steps, sizes, states):
        """(output steps, final states) of every layer and direction over ``steps`` (one
        (sizes[t], in) tensor per frame; a frame with fewer rows than the first continues
        only the first sizes[t] sequences, as in a PackedSequence)."""
        directions = 2 if self.bidirectional else 1
        # NOTE: the sequence goes between layers as a list of steps, never re-sliced: the
        # gradient of each slice of a (L, ...) tensor is scattered into a zero (L, ...)
        # array, which for L steps costs L times the sequence
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                steps = [_dropout(s, self.dropout) for s in steps]
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                weights = prepare(self.MODE, *self._weights(f"l{layer}{suffix}"))
                state = states[layer * directions + d]
                hs = [None] * len(steps)
                for t in (range(len(steps) - 1, -1, -1) if d else range(len(steps))):
                    if sizes[t] == sizes[0]:
                        state = step(self.MODE, steps[t], state, weights)
                        new = state
                    else:  # only the first sizes[t] sequences still run
                        new = step(self.MODE, steps[t], _rows(state, sizes[t]), weights)
                        state = _merge(new, state, sizes[t])
                    hs[t] = new[0] if self.MODE == "LSTM" else new
                outs.append(hs)
                finals.append(state)
            steps = outs[0] if directions == 1 else [joining.cat(pair, 1)
                                                     for pair in zip(*outs)]
        return steps, finals

    def _fused_layers(self, x, states):
        """(output, final states) of every layer and direction over x (T, N, in), each
        layer and direction one node of the fused hooks (lstm_layer, gru_layer)."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = _dropout(x, self.dropout)
            outs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh, _ = self._weights(f"l{layer}{suffix}")
                state, seq = states[layer * directions + d], shaping.flip(x, 0) if d else x
                if self.MODE == "LSTM":
                    out, h, c = lstm_sequence(seq, *state, w_ih, w_hh, b_ih, b_hh)
                    finals.append((h, c))
                else:
                    out, h = gru_sequence(seq, state, w_ih, w_hh, b_ih, b_hh)
                    finals.append(h)
                outs.append(shaping.flip(out, 0) if d else out)
            x = outs[0] if directions == 1 else joining.cat(outs, 2)
        return x, finals

    def _final_state(self, finals, unbatched):
        return _stack_state(finals, unbatched)

    def reverse(self, x, grad_out):
        """dL/dx and dL/dparams for dL/d(output sequence), from the tape."""
        return tape_reverse(self, lambda t: self(t)[0], x, grad_out)


def _rows(state, n):
    if isinstance(state, tuple):
        return tuple(s[:n] for s in state)
    return state[:n]


def _merge(new, state, n):
    """The first n rows from ``new``, the rest from ``state``."""
    if isinstance(state, tuple):
        return tuple(_merge(a, b, n) for a, b in zip(new, state))
    return joining.cat([new, state[n:]], 0)


def _permute(state, order):
    """``state`` (layers, N, H) (or a tuple of them) with its batch in ``order``."""
    if isinstance(state, (tuple, list)):
        return tuple(_permute(s, order) for s in state)
    return gathering.index_select(check_tensor("RNN", state), 1, order)


def _stack_state(parts, unbatched):
    state = joining.stack(parts, 0)
    if unbatched:
        state = movement.reshape(state, (state.shape[0], state.shape[2]))
    return state


def _dropout(x, p):
    if p >= 1.0:
        return m.mul(x, 0.0)
    keep = rand(x.shape, dtype=x.dtype, device=x.device) >= p
    return m.mul(x, m.mul(keep.astype(x.dtype), 1.0 / (1.0 - p)))


class RNN(_Recurrent):
    """Elman RNN, ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` with act ``tanh`` or
    ``relu`` (``nonlinearity``, 4th positional argument as in PyTorch);
    ``forward(x, h_0=None) -> (output, h_n)``."""

    MODE = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        mode = rnn_mode("RNN", nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, dtype=dtype, device=device)
        self.MODE, self.nonlinearity = mode, nonlinearity


class LSTM(_Recurrent):
    """Long short-term memory; ``forward(x, (h_0, c_0)=None) -> (output, (h_n, c_n))``.

    ``proj_size`` P > 0: h is projected to P features by ``weight_hr_l{k}`` after each step
    (h_0, h_n and the output then have P features, c keeps H)."""

    MODE = "LSTM"

    def _initial_states(self, hx, batch, like):
        if hx is None:
            hx = (None, None)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError("LSTM: the initial state must be a tuple (h_0, c_0)")
        return list(zip(self._initial(hx[0], batch, like, "h_0",
                                      self.proj_size or self.hidden_size),
                        self._initial(hx[1], batch, like, "c_0", self.hidden_size)))

    def _final_state(self, finals, unbatched):
        return (_stack_state([h for h, _ in finals], unbatched),
                _stack_state([c for _, c in finals], unbatched))


class GRU(_Recurrent):
    """Gated recurrent unit; ``forward(x, h_0=None) -> (output, h_n)``."""

    MODE = "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, dtype=dtype, device=device)


RNNBase = _Recurrent
"""The base class of RNN, LSTM and GRU, under PyTorch's name (``isinstance(m, nn.RNNBase)``)."""
