"""``F.linear_cross_entropy`` and its options, as PyTorch 2.13's: the cross-entropy of
``linear(input, linear_weight, linear_bias)`` against ``target``.

``options=None`` (the default) is the reference path: the logits made whole, then
``F.cross_entropy`` (any target kind, class weights, label smoothing, a K-dimensional
loss from a weight of shape (C, d_1, ..., d_K, in_features)).

``options=LinearCrossEntropyOptions(...)`` opts into the chunked path of an LLM's vocabulary
head, where the (N, C) logits are the largest tensor of the step: the rows go through in
chunks of ``batch_chunk_size``, each chunk's logits made, used and dropped, so that no
(N, C) tensor is ever held. As PyTorch's, the path takes class-index targets (int64),
reductions "mean", "sum" and "none", no label smoothing and no K-dimensional loss; other
calls warn and take the reference path. Its gradients are computed in the forward for
"mean" and "sum" (one pass over the chunks, which the backward then scales), and again
chunk by chunk in the backward for "none"; a second backward of a scalar reduction needs
``allow_retain_graph=True`` (it raises otherwise, as PyTorch's), and neither has a
double backward. float16 and bfloat16 inputs compute the chunks in float32.
"""

from __future__ import annotations

import dataclasses
import warnings

from fastnn.api import dtypes
from fastnn.api.errors import ShapeError
from fastnn.autograd.function import Function, once_differentiable
from fastnn.ops import creation
from fastnn.ops.joining import cat
from fastnn.ops.losses import cross_entropy
from fastnn.ops.movement import check_targets
from fastnn.ops.nnops import linear
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]

_POLICIES = ("auto", "accurate", "balanced", "compact")
_ACC_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How :func:`linear_cross_entropy` chunks its rows (PyTorch's fields and checks).

    ``batch_chunk_size``: rows per chunk (None: one chunk, unless ``chunking_method`` picks);
    ``chunking_method``: "auto", "aspect_ratio" or "aspect_ratio:N" (a chunk's logits as
    large as the input, or 1/N of that; rounded to a power of two), or None;
    ``allow_retain_graph``: keep the gradients for a second backward; ``acc_policy`` and
    ``acc_dtype``: PyTorch's precision knobs, checked and kept (fastnn accumulates float16
    and bfloat16 chunks in float32 under every policy, as PyTorch's "accurate")."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}; one of {_POLICIES}")
        if self.chunking_method not in (None, "auto"):
            name, sep, factor = str(self.chunking_method).partition(":")
            if not (name == "aspect_ratio" and (not sep or factor.isdigit() and int(factor))):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}; "
                                 f"'auto', 'aspect_ratio', 'aspect_ratio:N' (N >= 1) or None")
        size = self.batch_chunk_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                                 or size <= 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and getattr(self.acc_dtype, "name", None) not in \
                _ACC_DTYPES:
            raise ValueError(f"acc_dtype must be one of None, float16, bfloat16, float32 or "
                             f"float64, got {self.acc_dtype!r}")

    def chunk_rows(self, rows: int, in_features: int, classes: int, device, dtype) -> int:
        """The rows of one chunk for ``rows`` rows (PyTorch's ``_adjust``): the given size,
        or the aspect-ratio rule's (PyTorch's "auto" picks "aspect_ratio" for float16 and
        bfloat16 on the cpu, "aspect_ratio:2" elsewhere)."""
        method = self.chunking_method
        if method == "auto":
            if self.batch_chunk_size is not None:
                method = None
            else:
                half = dtype in (dtypes.float16, dtypes.bfloat16)
                method = "aspect_ratio" if half and str(device) == "cpu" else "aspect_ratio:2"
        size = rows if self.batch_chunk_size is None else min(self.batch_chunk_size, rows)
        if method is not None:
            _, _, factor = method.partition(":")
            target = -(-rows // -(-classes // in_features))
            by_method = min((1 << (target - 1).bit_length()) // int(factor or 1), rows)
            if self.batch_chunk_size is not None and self.batch_chunk_size != by_method:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {by_method}); pass only one")
            size = by_method
        return max(1, size)


def _chunk(x, w, b, target, class_weight, ignore_index, acc, plain):
    """One chunk in ``acc``: (per-row loss, the rows' weights (None for ``plain``: every
    target kept, no class weights), the safe targets, the softmax of the logits), the loss
    and the softmax from the backend's one fused hook. The logits' gradient is softmax -
    onehot(target), each row times its weight; the one-hot part is left to :class:`_Sums`
    (a few rows of x and W), which spares a write into the (rows, C) softmax."""
    logits = linear(x.to(acc), w.to(acc), None if b is None else b.to(acc))
    kept = None if plain else target != ignore_index
    safe = target if plain else target * kept  # (an ignored row reads class 0, weight 0)
    loss, probs = logits._device.ops.softmax_cross_entropy(logits._data, safe._data)
    loss = Tensor._make(loss, acc, logits._device)
    probs = Tensor._make(probs, acc, logits._device)
    if plain:
        return loss, None, safe, probs
    scale = kept.to(acc) if class_weight is None else class_weight.to(acc)[safe] * kept
    return loss * scale, scale, safe, probs


class _Sums:
    """The gradients of (input, weight, bias) summed over the chunks: the input's rows
    joined, the weight's and the bias's added (None where not needed). The one-hot part
    of the weight's and bias's is gathered over the chunks (the target rows and their
    scaled inputs) and taken off once, by one index_add, at the end."""

    def __init__(self, need):
        self.need, self.rows, self.weight, self.bias = need, [], None, None
        self.targets, self.scaled, self.scales = [], [], []

    def add(self, probs, scale, safe, x, w) -> None:
        """Take one chunk: the logits' gradient is ``(probs - onehot(safe)) * scale`` by
        rows (``scale`` None: ones), and ``x`` its input rows."""
        column = None if scale is None else scale[:, None]
        grad = probs if column is None else probs * column
        x = x.to(grad.dtype)
        if self.need[0]:
            w = w.to(grad.dtype)
            picked = w[safe] if column is None else w[safe] * column
            self.rows.append(grad @ w - picked)
        if self.need[1] or self.need[2]:
            self.targets.append(safe)
            self.scales.append(creation.ones_like(probs[:, 0]) if scale is None else scale)
        if self.need[1]:
            part = grad.mT @ x
            self.weight = part if self.weight is None else self.weight + part
            self.scaled.append(x if column is None else x * column)
        if self.need[2]:
            part = grad.sum(0)
            self.bias = part if self.bias is None else self.bias + part

    def result(self, factor, dtypes_of) -> tuple:
        """(dx, dW, db) times ``factor``, each in its input's dtype."""
        weight, bias = self.weight, self.bias
        if self.targets:
            targets = cat(self.targets, 0)
            if weight is not None:
                weight = weight.index_add(0, targets, cat(self.scaled, 0), alpha=-1)
            if bias is not None:
                bias = bias.index_add(0, targets, cat(self.scales, 0), alpha=-1)
        joined = (cat(self.rows, 0) if self.rows else None, weight, bias)
        return tuple(None if g is None else (g * factor).to(d) for g, d in zip(joined,
                                                                                 dtypes_of))


class _Chunked(Function):
    """The chunked path on 2-D input and 1-D target: the reduced loss, or the per-row one."""

    @staticmethod
    def forward(ctx, x, w, b, target, class_weight, ignore_index, reduction, rows, retain):
        acc = dtypes.float32 if x.dtype in (dtypes.float16, dtypes.bfloat16) else x.dtype
        ctx.setting = (ignore_index, reduction, rows, retain, acc)
        ctx.dtypes = (x.dtype, w.dtype, None if b is None else b.dtype)
        sums = _Sums(ctx.needs_input_grad[:3]) if reduction != "none" else None
        plain = class_weight is None and bool((target != ignore_index).all())
        losses, weight_sum = [], float(x.shape[0]) if plain else 0.0
        for start in range(0, x.shape[0], rows):
            xc = x[start:start + rows]
            loss, scale, safe, probs = _chunk(xc, w, b, target[start:start + rows],
                                              class_weight, ignore_index, acc, plain)
            losses.append(loss)
            if not plain:
                weight_sum = weight_sum + scale.sum()
            if sums is not None and any(sums.need):
                sums.add(probs, scale, safe, xc, w)
        loss = cat(losses, 0)
        if reduction == "none":
            ctx.save_for_backward(x, w, b, target, class_weight)
            return loss.to(x.dtype)
        ctx.sums, ctx.divisor = sums, weight_sum if reduction == "mean" else None
        total = loss.sum()
        return (total / weight_sum if reduction == "mean" else total).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        ignore_index, reduction, rows, retain, acc = ctx.setting
        rest = (None,) * 6
        if reduction == "none":
            x, w, b, target, class_weight = ctx.saved_tensors
            sums = _Sums(ctx.needs_input_grad[:3])
            for start in range(0, x.shape[0], rows):
                xc = x[start:start + rows]
                _, scale, safe, probs = _chunk(xc, w, b, target[start:start + rows],
                                               class_weight, ignore_index, acc, False)
                scale = scale * grad_out[start:start + rows].to(acc)
                sums.add(probs, scale, safe, xc, w)
            return sums.result(1.0, ctx.dtypes) + rest
        if ctx.sums is None:
            raise RuntimeError("linear_cross_entropy: a second backward through the chunked "
                               "path, whose gradients the first one used up; pass "
                               "LinearCrossEntropyOptions(allow_retain_graph=True) to keep "
                               "them (one gradient-sized copy more)")
        sums = ctx.sums
        if not retain:
            ctx.sums = None
        factor = grad_out.to(acc)
        if ctx.divisor is not None:
            factor = factor / ctx.divisor
        return sums.result(factor, ctx.dtypes) + rest


@public()
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias=None, weight=None, reduction: str = "mean",
                         ignore_index=None, label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``: input
    (in_features,) or (N, in_features); linear_weight (C, in_features), or (C, d_1, ...,
    d_K, in_features) for a K-dimensional loss over batched input; ``ignore_index`` None
    means -100 (and refuses probability targets otherwise); ``options``: the chunked path
    (see the module's docstring)."""
    for name, value in (("input", input), ("linear_weight", linear_weight),
                        ("target", target)):
        if not isinstance(value, Tensor):
            raise TypeError(f"linear_cross_entropy: {name} must be a Tensor, got "
                            f"{type(value).__name__}")
    if not 1 <= input.ndim <= 2:
        raise ShapeError(f"linear_cross_entropy: expected input with dimensionality 1 or 2, "
                         f"got {input.ndim}")
    if linear_weight.ndim < 2:
        raise ShapeError(f"linear_cross_entropy: expected linear_weight with "
                         f"dimensionality at least 2, got {linear_weight.ndim}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise ShapeError(f"linear_cross_entropy: expected equal input and linear_weight "
                         f"last dimensions (in_features), got {in_features} and "
                         f"{linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise ShapeError(f"linear_cross_entropy: expected linear_bias shape "
                         f"{(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise ShapeError(f"linear_cross_entropy: K-dimensional loss defined by "
                         f"linear_weight shape {tuple(linear_weight.shape)} requires "
                         f"batched input, (N, {in_features}), got unbatched input with "
                         f"shape {tuple(input.shape)}")
    probabilities = tuple(target.shape) == (*batch, classes, *out_features)
    if probabilities and ignore_index is not None:
        raise RuntimeError("linear_cross_entropy: ignore_index cannot be specified when "
                           "target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunked = (not out_features and reduction in ("mean", "sum", "none")
                   and label_smoothing == 0.0 and target.dtype == dtypes.int64)
        if chunked:
            return _chunked(input, linear_weight, target, linear_bias, weight, ignore_index,
                            reduction, options)
        warnings.warn(
            f"linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            f"{{'mean','sum','none'}}, label_smoothing == 0, target.dtype == int64, "
            f"out_features == (). Got reduction={reduction!r}, "
            f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={out_features}", stacklevel=2)
    flat_weight = linear_weight.reshape(-1, in_features)
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, flat_weight, flat_bias)
    if out_features:
        logits = logits.reshape(*batch, classes, *out_features)
    return cross_entropy(logits, target, weight=weight, ignore_index=ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


def _chunked(x, w, target, b, class_weight, ignore_index, reduction, options):
    if not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"linear_cross_entropy: options must be a LinearCrossEntropyOptions "
                        f"or None, got {type(options).__name__}")
    single = x.ndim == 1
    if single:
        x, target = x.reshape(1, -1), target.reshape(1)
    elif tuple(target.shape) != (x.shape[0],):
        raise ShapeError(f"linear_cross_entropy: expected target of shape "
                         f"({x.shape[0]},) for input {tuple(x.shape)}, got "
                         f"{tuple(target.shape)}")
    check_targets("linear_cross_entropy", target, w.shape[0], ignore_index)
    rows = options.chunk_rows(x.shape[0], x.shape[1], w.shape[0], x.device, x.dtype)
    loss = _Chunked.apply(x, w, b, target, class_weight, int(ignore_index), reduction, rows,
                          bool(options.allow_retain_graph))
    return loss.reshape(()) if single and reduction == "none" else loss
