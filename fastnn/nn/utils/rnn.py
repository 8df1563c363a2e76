"""Packed sequences, as PyTorch's ``torch.nn.utils.rnn``.

A :class:`PackedSequence` holds a batch of sequences of different lengths without padding:
``data`` stacks, frame by frame, the rows of the sequences still running (longest first),
and ``batch_sizes[t]`` says how many run at frame t. RNN, LSTM and GRU take one and return
one (with h_n taken at each sequence's own last frame). :func:`pack_padded_sequence` and
:func:`pad_packed_sequence` go from and to a padded (T, N, *) tensor, each one gather (so
one scatter-add backward); ``sorted_indices`` / ``unsorted_indices`` carry the batch order
when the lengths were not sorted (``enforce_sorted=False``). As PyTorch's, a PackedSequence
moves and casts its ``data`` with ``to``, ``cpu``, ``cuda``, ``float``, ``double`` ...
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastnn.api.dtypes import float16, float32, float64, int8, int16, int32, int64, uint8
from fastnn.ops import gathering, joining, movement, sorting
from fastnn.ops.tensor import Tensor, full, tensor


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-d permutation of indices (None stays None), as PyTorch's."""
    if permutation is None:
        return None
    return sorting.argsort(permutation, 0, stable=True)


class PackedSequence(_PackedFields):
    """(data (sum of lengths, *), batch_sizes (T,) int64 on cpu, sorted_indices,
    unsorted_indices) as PyTorch's; ``unsorted_indices`` defaults to the inverse of
    ``sorted_indices``."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data.to(*args, **kwargs)``, the indices following it to its device;
        ``batch_sizes`` stays on the cpu. Self when ``data`` is unchanged."""
        return self._with_data(self.data.to(*args, **kwargs))

    def _with_data(self, data: Tensor) -> PackedSequence:
        if data is self.data:
            return self
        def follow(indices):
            return None if indices is None else indices.to(data.device)
        return type(self)(data, self.batch_sizes, follow(self.sorted_indices),
                          follow(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        return self._with_data(self.data.cpu())

    def cuda(self, device=None) -> PackedSequence:
        return self._with_data(self.data.cuda(device))

    def double(self) -> PackedSequence:
        return self.to(dtype=float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=uint8)

    def pin_memory(self) -> PackedSequence:
        return self._with_data(self.data.pin_memory())

    def is_pinned(self) -> bool:
        return self.data.is_pinned()

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


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


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of (L_i, *) sequences of a PackedSequence, in the batch's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of (L_i, *) sequences of a padded batch, as PyTorch's."""
    lengths = _host_lengths(lengths)
    if not batch_first:
        padded_sequences = movement.transpose(
            padded_sequences, (1, 0) + tuple(range(2, padded_sequences.ndim)))
    return [padded_sequences[b, :int(n)] for b, n in enumerate(lengths)]
