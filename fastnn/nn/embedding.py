"""Embedding, EmbeddingBag and Bilinear, as PyTorch's.

Embedding: y[..., :] = weight[indices[...], :] through ``F.embedding`` (a gather; its
gradient, a scatter-add of grad_out into the rows, comes from the tape). EmbeddingBag: a
sum, mean or max of the rows of each bag, through ``F.embedding_bag``. Bilinear:
y = x1^T W x2 + b through ``F.bilinear``. Integer inputs have no gradient, so ``reverse``
of the embeddings gives grad_x None; Bilinear's ``reverse(x1, grad_out, x2)`` gives x1's.
"""

from __future__ import annotations

import math

from fastnn.api import dtypes
from fastnn.api.args import as_given, integer
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn import init
from fastnn.nn.module import Module, Parameter, check_tensor, tape_reverse, uniform_init
from fastnn.nn.parameter import reset_fan_in_uniform
from fastnn.ops import embedding_bag as bag_ops
from fastnn.ops import gathering
from fastnn.ops.tensor import host_rng


def _padding_index(owner: str, padding_idx, num: int):
    if padding_idx is None:
        return None
    padding_idx = integer(owner, "padding_idx", padding_idx, -num)
    if padding_idx >= num:
        raise ValueError(f"{owner}: padding_idx must be in [-{num}, {num}), got {padding_idx}")
    return padding_idx % num


def _table(owner, num, dim, padding_idx, weight, dtype, device):
    """The (num, dim) table: N(0, 1) with a zero padding row, or ``_weight`` as given."""
    if weight is not None:
        check_tensor(owner, weight)
        if weight.shape != (num, dim):
            raise ValueError(f"{owner}: _weight must have shape ({num}, {dim}), got "
                             f"{weight.shape}")
        return Parameter(weight.detach())
    host = host_rng().standard_normal((num, dim))
    if padding_idx is not None:
        host[padding_idx] = 0.0
    return Parameter.from_numpy(host, "connective", dtype, device)


def _pretrained(owner: str, embeddings) -> tuple:
    """The shape of a ``from_pretrained`` table, checked 2-d."""
    check_tensor(f"{owner}.from_pretrained", embeddings)
    if embeddings.ndim != 2:
        raise ValueError(f"{owner}.from_pretrained: embeddings must be 2-d, got shape "
                         f"{embeddings.shape}")
    return embeddings.shape


def _check_indices(owner: str, indices) -> None:
    check_tensor(owner, indices)
    if indices.dtype not in (dtypes.int64, dtypes.int32):
        raise TypeError(f"{owner}: indices must be an int64 or int32 tensor, got "
                        f"{indices.dtype.name}")


class Embedding(Module):
    """num_embeddings vectors of size embedding_dim; weight (num, dim), class connective,
    initialised N(0, 1) as PyTorch's.

    ``padding_idx``: that row starts at zero and gets no gradient (its output is still the
    row's value, so a loaded non-zero row gives what PyTorch gives). ``max_norm``,
    ``norm_type`` and ``scale_grad_by_freq`` as in ``F.embedding``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings = integer("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = integer("Embedding", "embedding_dim", embedding_dim)
        self.padding_idx = _padding_index("Embedding", padding_idx, self.num_embeddings)
        if sparse:
            raise ValueError("Embedding: sparse=True (a sparse gradient) is not supported; "
                             "fastnn's gradients are dense, leave sparse=False")
        self.max_norm, self.norm_type = max_norm, as_given(float(norm_type), norm_type)
        self.scale_grad_by_freq, self.sparse = bool(scale_grad_by_freq), False
        self.weight = _table("Embedding", self.num_embeddings, self.embedding_dim,
                             self.padding_idx, _weight, dtype, device)
        self.weight.requires_grad_(not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False):
        """An Embedding whose weight is (a copy of) the 2-d tensor ``embeddings``, frozen
        unless ``freeze=False``."""
        return cls(*_pretrained("Embedding", embeddings), padding_idx, max_norm, norm_type,
                   scale_grad_by_freq, sparse, _weight=embeddings, _freeze=freeze)

    def reset_parameters(self) -> None:
        """Draw the weight again, in place: N(0, 1), the padding row zero (PyTorch's)."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}{_norm_repr(self)}"

    def forward(self, indices):
        _check_indices("Embedding", indices)
        return gathering.embedding(indices, self.weight, self.padding_idx, self.max_norm,
                                   self.norm_type, self.scale_grad_by_freq)


def _norm_repr(table) -> str:
    """PyTorch's repr of an embedding's max_norm, norm_type and scale_grad_by_freq, each
    where it is not the default."""
    return ("" if table.max_norm is None else f", max_norm={table.max_norm}") + (
        "" if table.norm_type == 2 else f", norm_type={table.norm_type}") + (
        ", scale_grad_by_freq=True" if table.scale_grad_by_freq else "")


class EmbeddingBag(Module):
    """Sums, means (default) or maxima of bags of embeddings, without the per-index output
    of Embedding; ``forward(input, offsets=None, per_sample_weights=None) -> (bags, dim)``.

    A 2-d input (B, N) is B bags of N; a 1-d input needs ``offsets``, the start of each bag
    (with ``include_last_offset`` also the end of the last). ``per_sample_weights`` (mode
    'sum' only) scale each entry; entries equal to ``padding_idx`` are left out."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = integer("EmbeddingBag", "num_embeddings", num_embeddings)
        self.embedding_dim = integer("EmbeddingBag", "embedding_dim", embedding_dim)
        if mode not in bag_ops.MODES:
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if sparse:
            raise ValueError("EmbeddingBag: sparse=True (a sparse gradient) is not supported; "
                             "fastnn's gradients are dense, leave sparse=False")
        self.padding_idx = _padding_index("EmbeddingBag", padding_idx, self.num_embeddings)
        self.max_norm, self.norm_type = max_norm, as_given(float(norm_type), norm_type)
        self.scale_grad_by_freq, self.mode, self.sparse = bool(scale_grad_by_freq), mode, False
        self.include_last_offset = bool(include_last_offset)
        self.weight = _table("EmbeddingBag", self.num_embeddings, self.embedding_dim,
                             self.padding_idx, _weight, dtype, device)

    def reset_parameters(self) -> None:
        """Draw the weight again, in place: N(0, 1), the padding row zero (PyTorch's)."""
        Embedding.reset_parameters(self)

    def _fill_padding_idx_with_zero(self) -> None:
        Embedding._fill_padding_idx_with_zero(self)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """An EmbeddingBag whose weight is (a copy of) the 2-d tensor ``embeddings``, frozen
        unless ``freeze=False``, as PyTorch's."""
        bag = cls(*_pretrained("EmbeddingBag", embeddings), max_norm, norm_type,
                  scale_grad_by_freq, mode, sparse, embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return (f"{self.num_embeddings}, {self.embedding_dim}{_norm_repr(self)}, "
                f"mode='{self.mode}'{pad}")

    def forward(self, input, offsets=None, per_sample_weights=None):
        _check_indices("EmbeddingBag", input)
        return bag_ops.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                                     self.scale_grad_by_freq, self.mode, False,
                                     per_sample_weights, self.include_last_offset,
                                     self.padding_idx)

    def reverse(self, x, grad_out, offsets=None, per_sample_weights=None):
        """(None, {"weight": dL/dweight}) for dL/d(output), from the tape."""
        return tape_reverse(self, lambda t: self(t, offsets, per_sample_weights), x, grad_out)


class Bilinear(Module):
    """y = x1^T W x2 + b: weight (out, in1, in2), bias (out,), both U(-1/sqrt(in1),
    1/sqrt(in1)) as PyTorch's; ``forward(input1, input2)``."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features = integer("Bilinear", "in1_features", in1_features)
        self.in2_features = integer("Bilinear", "in2_features", in2_features)
        self.out_features = integer("Bilinear", "out_features", out_features)
        bound = 1.0 / math.sqrt(self.in1_features)
        shape = (self.out_features, self.in1_features, self.in2_features)
        self.weight = uniform_init(shape, bound, "connective", dtype, device)
        self.bias = (uniform_init((self.out_features,), bound, "bias", dtype, device) if bias
                     else None)

    def reset_parameters(self) -> None:
        """Draw the parameters again, in place, as at construction (PyTorch's init)."""
        reset_fan_in_uniform(self, self.in1_features)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")

    def forward(self, input1, input2):
        check_tensor("Bilinear", input1)
        check_tensor("Bilinear", input2)
        return bag_ops.bilinear(input1, input2, self.weight, self.bias)

    def reverse(self, x, grad_out, input2=None):
        """dL/dinput1 and dL/dparams for dL/d(output), ``input2`` given and held constant."""
        if input2 is None:
            raise TypeError("Bilinear.reverse: give the second input too: "
                            "reverse(input1, grad_out, input2)")
        other = check_tensor("Bilinear", input2).detach()
        return tape_reverse(self, lambda t: self(t, other), x, grad_out)
