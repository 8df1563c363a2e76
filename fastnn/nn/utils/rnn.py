"""Packed sequences, as PyTorch's ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds a batch of sequences of different lengths without padding:
``data`` stacks, frame by frame, the rows of the sequences still running (longest first),
and ``batch_sizes[t]`` says how many run at frame t. RNN, LSTM and GRU take one and return
one (with h_n taken at each sequence's own last frame). :func:`pack_padded_sequence` and
:func:`pad_packed_sequence` go from and to a padded (T, N, *) tensor, each one gather (so
one scatter-add backward); ``sorted_indices`` / ``unsorted_indices`` carry the batch order
when the lengths were not sorted (``enforce_sorted=False``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastnn.ops import gathering, joining, movement
from fastnn.ops.tensor import Tensor, full, tensor


class PackedSequence(NamedTuple):
    """(data (sum of lengths, *), batch_sizes (T,) int64 on cpu, sorted_indices,
    unsorted_indices) as PyTorch's."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None


def _host_lengths(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating:
            raise TypeError(f"lengths must hold integers, got {lengths.dtype.name}")
        lengths = lengths.numpy()
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise ValueError(f"lengths must be a 1-d list or tensor of ints, got {lengths!r}")
    if lengths.size and lengths.min() <= 0:
        raise ValueError(f"the length of every sequence must be greater than 0, got "
                         f"{lengths.tolist()}")
    return lengths.astype(np.int64)


def _positions(lengths: np.ndarray, batch: int) -> np.ndarray:
    """For each packed row, its index t * batch + b in a (T, batch) grid (sorted order)."""
    frames = int(lengths.max())
    grid = np.arange(frames)[:, None] < lengths[None, :]  # (T, N): frame t of sample b runs
    t, b = np.nonzero(grid)
    return t * batch + b


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """The list of (L_i, *) tensors padded with ``padding_value`` to (T, N, *) (or (N, T, *)
    with ``batch_first``), T the longest; ``padding_side`` 'right' or 'left'."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got "
                         f"{padding_side!r}")
    sequences = list(sequences)
    if not sequences or not all(isinstance(s, Tensor) and s.ndim >= 1 for s in sequences):
        raise TypeError("pad_sequence: sequences must be a non-empty list of tensors with at "
                        "least one dim")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            fill = full((extra,) + s.shape[1:], padding_value, s.dtype, s.device)
            s = joining.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return joining.stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, N, *) (or (N, T, *)) batch whose sample b has ``lengths[b]``
    frames; lengths must be decreasing unless ``enforce_sorted=False``."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise TypeError("pack_padded_sequence: input must be a tensor (T, N, *) or, with "
                        "batch_first, (N, T, *)")
    lengths = _host_lengths(lengths)
    if batch_first:
        input = movement.transpose(input, (1, 0) + tuple(range(2, input.ndim)))
    frames, batch = input.shape[:2]
    if lengths.size != batch or lengths.max() > frames:
        raise ValueError(f"pack_padded_sequence: lengths {lengths.tolist()} must give one "
                         f"length of at most {frames} per sample of the batch of {batch}")
    sorted_indices = unsorted_indices = None
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError("pack_padded_sequence: `lengths` must be sorted in decreasing "
                               "order when enforce_sorted is True; pass enforce_sorted=False "
                               "to pack an unsorted batch")
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = tensor(order, device=input.device)
        unsorted_indices = tensor(np.argsort(order), device=input.device)
        input = gathering.index_select(input, 1, sorted_indices)
    flat = movement.reshape(input, (frames * batch,) + input.shape[2:])
    data = gathering.index_select(flat, 0, tensor(_positions(lengths, batch),
                                                  device=input.device))
    batch_sizes = tensor((np.arange(int(lengths.max()))[:, None] < lengths).sum(1))
    return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length=None):
    """(padded (T, N, *) or (N, T, *), lengths (N,) int64), the inverse of
    :func:`pack_padded_sequence`, in the original batch order; ``total_length`` pads T."""
    data, batch_sizes = sequence.data, np.asarray(sequence.batch_sizes.numpy())
    batch, frames = int(batch_sizes[0]), int(batch_sizes.size)
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)  # sorted order
    if total_length is not None:
        if total_length < frames:
            raise ValueError(f"pad_packed_sequence: total_length {total_length} is shorter "
                             f"than the longest sequence ({frames})")
        frames = int(total_length)
    # each (t, b) of the padded grid reads its packed row, or the padding row at the end
    source = np.full(frames * batch, data.shape[0], np.int64)
    source[_positions(lengths, batch)] = np.arange(data.shape[0])
    pad = full((1,) + data.shape[1:], padding_value, data.dtype, data.device)
    rows = gathering.index_select(joining.cat([data, pad], 0), 0,
                                  tensor(source, device=data.device))
    padded = movement.reshape(rows, (frames, batch) + data.shape[1:])
    if sequence.unsorted_indices is not None:
        padded = gathering.index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[np.asarray(sequence.unsorted_indices.numpy())]
    if batch_first:
        padded = movement.transpose(padded, (1, 0) + tuple(range(2, padded.ndim)))
    return padded, tensor(lengths.astype(np.int64))


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors (decreasing lengths unless enforce_sorted=False)."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of (L_i, *) sequences of a padded batch, as PyTorch's."""
    lengths = _host_lengths(lengths)
    if not batch_first:
        padded_sequences = movement.transpose(
            padded_sequences, (1, 0) + tuple(range(2, padded_sequences.ndim)))
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lengths)]
