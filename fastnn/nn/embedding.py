"""Embedding: a lookup table of vectors, as PyTorch's.

y[..., :] = weight[indices[...], :] through ``F.embedding`` (a gather; its gradient, a
scatter-add of grad_out into the rows, comes from the tape).
"""

from __future__ import annotations

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.nn.module import Module, Parameter, check_tensor
from fastnn.ops import gathering
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
        return gathering.embedding(indices, self.weight, self.padding_idx)
