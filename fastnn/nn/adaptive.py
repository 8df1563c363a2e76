"""AdaptiveLogSoftmaxWithLoss, PyTorch's (Grave et al., "Efficient softmax approximation
for GPUs"), with its submodule names, so that a PyTorch state_dict loads as it is.

The classes [0, n_classes) are split at ``cutoffs``: the first ``cutoffs[0]`` (the
shortlist) are scored by ``head`` (Linear(in_features, shortlist + clusters), one more
output per cluster), cluster i's classes [cutoffs[i], cutoffs[i + 1]) by ``tail[i]``
(Sequential(Linear(in_features, in_features // div_value ** (i + 1)), Linear(that,
cluster size)), no biases). A class's log-probability is its head log-softmax entry, or its
cluster's head entry plus its log-softmax entry in that cluster.

``forward(input, target)`` evaluates each cluster only on the rows whose target lies in it
(as PyTorch: the rows are read on the host), and returns ``_ASMoutput(output, loss)``: each
row's target log-probability and their negated mean. ``log_prob`` gives all classes,
``predict`` the most likely one. Gradients from the tape (index_select, gather, cat).
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from fastnn.api import dtypes
from fastnn.api.args import integer
from fastnn.nn import init
from fastnn.nn.container import Sequential
from fastnn.nn.linear import Linear
from fastnn.nn.lists import ModuleList
from fastnn.nn.module import Module, check_tensor, const_init
from fastnn.ops import joining, movement, nnops
from fastnn.ops.gathering import index_select, take_along_dim
from fastnn.ops.tensor import Tensor, full, tensor

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])
_NAME = "AdaptiveLogSoftmaxWithLoss"


def _rows(values, like: Tensor) -> Tensor:
    """int64 indices (a host array) on ``like``'s device."""
    return tensor(np.asarray(values, dtype=np.int64), dtype=dtypes.int64, device=like.device)


def _linear(in_features: int, out_features: int, dtype, device) -> Linear:
    """Linear(in_features, out_features, bias=False); with no features on one side (a
    cluster whose in_features // div_value ** i is 0, as PyTorch allows) its weight is
    empty, so the cluster's scores are all 0 (fastnn's Linear itself asks for >= 1)."""
    if in_features >= 1 and out_features >= 1:
        return Linear(in_features, out_features, bias=False, dtype=dtype, device=device)
    layer = Linear(max(in_features, 1), max(out_features, 1), bias=False, dtype=dtype,
                   device=device)
    layer.in_features, layer.out_features = in_features, out_features
    layer.weight = const_init((out_features, in_features), 0.0, "connective", dtype, device)
    return layer


class AdaptiveLogSoftmaxWithLoss(Module):
    """PyTorch's AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0,
    head_bias=False, device=None, dtype=None); input (N, in_features) with target (N,),
    or (in_features,) with a 0-d target."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None, dtype=None):
        super().__init__()
        in_features = integer(_NAME, "in_features", in_features)
        n_classes = integer(_NAME, "n_classes", n_classes)
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError(f"{_NAME}: cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError(f"{_NAME}: cutoffs should be a sequence of unique, positive "
                             f"integers sorted in an increasing order, where each value is "
                             f"between 1 and n_classes-1 = {n_classes - 1}, got {cutoffs}")
        if not (isinstance(div_value, (int, float)) and div_value > 0):
            raise ValueError(f"{_NAME}: div_value must be a positive number, got {div_value!r}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype,
                           device=device)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(_linear(in_features, hidden, dtype, device),
                                        _linear(hidden, size, dtype, device)))

    def reset_parameters(self) -> None:
        """New weights (and head bias) from PyTorch's Linear init, U(+-1/sqrt(in))."""
        layers = [self.head] + [layer for pair in self.tail for layer in pair]
        for layer in layers:
            bound = 1.0 / math.sqrt(layer.in_features) if layer.in_features else 0.0
            init.uniform_(layer.weight, -bound, bound)
            if layer.bias is not None:
                init.uniform_(layer.bias, -bound, bound)

    def _checked(self, input, target):  # noqa: A002
        check_tensor(_NAME, input)
        if not isinstance(target, Tensor):
            raise TypeError(f"{_NAME}: target must be a Tensor of class indices, got "
                            f"{type(target).__name__}")
        if target.dtype.is_floating or target.dtype.name == "bool":
            raise TypeError(f"{_NAME}: target must be an integer tensor of class indices, got "
                            f"{target.dtype.name}")
        if target.ndim == 1:
            if input.ndim != 2:
                raise ValueError(f"{_NAME}: 1D target tensor expects 2D input tensors, but "
                                 f"found inputs with size {input.shape}")
            if input.shape[0] != target.shape[0]:
                raise ValueError(f"{_NAME}: Input and target should have the same size in the "
                                 f"batch dimension, got {input.shape[0]} and "
                                 f"{target.shape[0]}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ValueError(f"{_NAME}: 0D target tensor expects 1D input tensors, but "
                                 f"found inputs with size {input.shape}")
        else:
            raise ValueError(f"{_NAME}: 0D or 1D target tensor expected, multi-target not "
                             f"supported, got target of shape {target.shape}")
        if input.shape[-1] != self.in_features:
            raise ValueError(f"{_NAME}: input must have in_features = {self.in_features} "
                             f"features, got shape {input.shape}")

    def forward(self, input, target):  # noqa: A002
        self._checked(input, target)
        batched = target.ndim > 0
        if not batched:
            input = movement.reshape(input, (1,) + input.shape)  # noqa: A001
        labels = np.asarray(target.numpy(), dtype=np.int64).reshape(-1)
        batch = labels.shape[0]
        bad = (labels < 0) | (labels >= self.n_classes)
        if bad.any():
            raise ValueError(f"{_NAME}: Target values should be in [0, {self.n_classes - 1}], "
                             f"but values in range [{labels.min()}, {labels.max()}] were found")
        head_logprob = nnops.log_softmax(self.head(input), 1)
        # each row's head column: its class in the shortlist, else its cluster's column
        cluster = np.searchsorted(np.asarray(self.cutoffs), labels, side="right")
        column = np.where(cluster == 0, labels, self.shortlist_size + cluster - 1)
        head_part = take_along_dim(head_logprob, _rows(column.reshape(-1, 1), input), axis=1)
        parts, order = [], []
        for i in range(self.n_clusters + 1):
            rows = np.flatnonzero(cluster == i)
            if rows.size == 0:
                continue
            order.append(rows)
            if i == 0:  # the shortlist: the head alone
                parts.append(full((rows.size,), 0.0, input.dtype, input.device))
                continue
            subset = index_select(input, 0, _rows(rows, input))
            local = nnops.log_softmax(self.tail[i - 1](subset), 1)
            relative = (labels[rows] - self.cutoffs[i - 1]).reshape(-1, 1)
            parts.append(movement.reshape(take_along_dim(local, _rows(relative, input), axis=1),
                                          (rows.size,)))
        if parts:
            inverse = np.argsort(np.concatenate(order), kind="stable")
            tail_part = index_select(joining.cat(parts, 0), 0, _rows(inverse, input))
        else:
            tail_part = full((batch,), 0.0, input.dtype, input.device)
        output = tail_part + movement.reshape(head_part, (batch,))
        loss = movement.mean(-output)
        if not batched:
            output = movement.reshape(output, ())
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):  # noqa: A002
        """(N, n_classes) log-probabilities of every class, given ``head(input)``."""
        head_logprob = nnops.log_softmax(head_output, 1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = nnops.log_softmax(self.tail[i](input), 1)
            column = self.shortlist_size + i
            pieces.append(cluster_logprob + head_logprob[:, column:column + 1])
        return joining.cat(pieces, 1)

    def _input(self, input, op: str):  # noqa: A002
        check_tensor(_NAME, input)
        if input.ndim not in (1, 2) or input.shape[-1] != self.in_features:
            raise ValueError(f"{_NAME}.{op}: input must be (N, {self.in_features}) or "
                             f"({self.in_features},), got shape {input.shape}")
        return input if input.ndim == 2 else movement.reshape(input, (1,) + input.shape)

    def log_prob(self, input):  # noqa: A002
        """log-probabilities (N, n_classes) of every class for input (N, in_features) (of
        (in_features,): (n_classes,), which PyTorch's does not take)."""
        rows = self._input(input, "log_prob")
        out = self._full_log_prob(rows, self.head(rows))
        return out if input.ndim == 2 else movement.reshape(out, (self.n_classes,))

    def predict(self, input):  # noqa: A002
        """The most likely class of each row (int64 (N,), or 0-d for one input row), as
        ``log_prob(input).argmax(dim=1)`` with the head alone deciding where its best
        entry is a shortlist class, as PyTorch's."""
        rows = self._input(input, "predict")
        head_output = self.head(rows)
        output = movement.argmax(head_output, axis=1)
        outside = output.numpy() >= self.shortlist_size
        if outside.all():
            output = movement.argmax(self._full_log_prob(rows, head_output), axis=1)
        elif outside.any():
            picked = _rows(np.flatnonzero(outside), rows)
            best = movement.argmax(self._full_log_prob(index_select(rows, 0, picked),
                                                       index_select(head_output, 0, picked)),
                                   axis=1)
            output = output.clone()
            output[picked] = best
        return output if input.ndim == 2 else movement.reshape(output, ())

    def reverse(self, x, grad_out):
        raise NotImplementedError(f"{_NAME}.reverse: forward takes an input and a target and "
                                  f"returns (output, loss); differentiate it on the tape "
                                  f"(loss.backward())")
