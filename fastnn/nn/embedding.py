"""Embedding: a lookup table of vectors, as PyTorch's.

y[..., :] = weight[indices[...], :], computed as one_hot(indices) @ weight so that the
gradient (a scatter-add of grad_out into the rows) comes from the tape.
NOTE: when the gather op of issue 13 (``F.embedding``) lands, forward becomes that op;
the one-hot product costs indices x num_embeddings x embedding_dim.
"""

from __future__ import annotations

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.nn.module import Module, Parameter, check_tensor
from fastnn.ops import elementwise as m
from fastnn.ops import movement, nnops
from fastnn.ops.tensor import host_rng


class Embedding(Module):
    """num_embeddings vectors of size embedding_dim; weight (num, dim), class connective,
    initialised N(0, 1) as PyTorch's.

    ``padding_idx``: that row starts at zero and gets no gradient (its output is still the
    row's value, so a loaded non-zero row gives what PyTorch gives).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, dtype=None,
                 device=None):
        super().__init__()
        self.num_embeddings = integer("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = integer("Embedding", "embedding_dim", embedding_dim)
        if padding_idx is not None:
            padding_idx = integer("Embedding", "padding_idx", padding_idx, -self.num_embeddings)
            if padding_idx >= self.num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be in [-{num_embeddings}, "
                                 f"{num_embeddings}), got {padding_idx}")
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        host = host_rng().standard_normal((self.num_embeddings, self.embedding_dim))
        if padding_idx is not None:
            host[padding_idx] = 0.0
        self.weight = Parameter.from_numpy(host, "connective", dtype, device)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"

    def forward(self, indices):
        check_tensor("Embedding", indices)
        if indices.dtype not in (dtypes.int64, dtypes.int32):
            raise TypeError(f"Embedding: indices must be an int64 or int32 tensor, got "
                            f"{indices.dtype.name}")
        onehot = movement.one_hot(indices, self.num_embeddings, self.weight.dtype)
        if self.padding_idx is None:
            return nnops.matmul(onehot, self.weight)
        row = np.zeros(self.num_embeddings)
        row[self.padding_idx] = 1.0
        pad = onehot.__class__._make(
            onehot._device.ops.from_numpy(row.astype(self.weight.dtype.numpy),
                                          onehot._device.index), self.weight.dtype, onehot._device)
        kept = m.mul(onehot, m.add(m.neg(pad), 1.0))
        padded = m.mul(onehot, pad)
        return m.add(nnops.matmul(kept, self.weight), nnops.matmul(padded, self.weight.detach()))
