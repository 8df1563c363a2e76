"""``torch.NAME`` where PyTorch's top-level function takes ATen's arguments, not those of
``torch.nn.functional.NAME``: ``torch.embedding(weight, indices)``, ``torch.batch_norm(input,
weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)``, the
losses with an int ``reduction`` (0 none, 1 mean, 2 sum), dropouts with a required ``train``.

Each is the functional op called with its arguments reordered: nothing here has a gradient
or a backend hook of its own.
"""

from __future__ import annotations

import warnings

from fastnn.api.args import flag
from fastnn.ops import dropout
from fastnn.ops.linalg_more import multi_dot
from fastnn.ops.table import FUNCTIONAL, public
from fastnn.ops.tensor import Tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduce(op: str, loss: Tensor, how) -> Tensor:
    """ATen's int ``reduction`` (or its name) applied to an unreduced loss."""
    how = _REDUCTIONS.get(how, how) if type(how) is int else how
    if how == "none":
        return loss
    if how == "mean":
        return loss.mean()
    if how == "sum":
        return loss.sum()
    raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {how!r}")


# NOTE: PyTorch's Python binding of these ATen losses reads the schema's default
# ``reduction=at::Reduction::Mean`` as 0: ``torch.kl_div(a, b)`` is unreduced, unlike
# ``F.kl_div(a, b)``. The defaults below are 0 to mean what PyTorch computes.


@public(top=True, functional=False, name="kl_div")
def kl_div_top(input: Tensor, target: Tensor, reduction=0, *, log_target=False) -> Tensor:  # noqa: A002
    """``torch.kl_div``: ``F.kl_div`` with an int reduction (0 none, 1 mean over every
    element, 2 sum); unreduced by default, as PyTorch's binding."""
    loss = FUNCTIONAL["kl_div"](input, target, reduction="none", log_target=log_target)
    return _reduce("kl_div", loss, reduction)


@public(top=True, functional=False, name="binary_cross_entropy_with_logits")
def bce_with_logits_top(input: Tensor, target: Tensor, weight=None, pos_weight=None,  # noqa: A002
                        reduction=0) -> Tensor:
    """``torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight,
    reduction)``: ATen's argument order, an int reduction; unreduced by default."""
    loss = FUNCTIONAL["binary_cross_entropy_with_logits"](
        input, target, weight, reduction="none", pos_weight=pos_weight)
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


def _pair_loss(name: str, margin_default: float):
    op = FUNCTIONAL[name]

    def fn(input1: Tensor, input2: Tensor, target: Tensor, margin=margin_default,
           reduction=0) -> Tensor:
        return _reduce(name, op(input1, input2, target, margin, reduction="none"), reduction)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``torch.{name}(input1, input2, target, margin={margin_default}, "
                  f"reduction)``: ``F.{name}`` with an int reduction; unreduced by default.")
    return public(top=True, functional=False, name=name)(fn)


_pair_loss("cosine_embedding_loss", 0.0)
_pair_loss("margin_ranking_loss", 0.0)


@public(top=True, functional=False, name="hinge_embedding_loss")
def hinge_embedding_loss_top(input: Tensor, target: Tensor, margin=1.0,  # noqa: A002
                             reduction=0) -> Tensor:
    """``torch.hinge_embedding_loss(input, target, margin, reduction)``: an int reduction;
    unreduced by default."""
    loss = FUNCTIONAL["hinge_embedding_loss"](input, target, margin, reduction="none")
    return _reduce("hinge_embedding_loss", loss, reduction)


@public(top=True, functional=False, name="poisson_nll_loss")
def poisson_nll_loss_top(input: Tensor, target: Tensor, log_input, full, eps,  # noqa: A002
                         reduction) -> Tensor:
    """``torch.poisson_nll_loss(input, target, log_input, full, eps, reduction)``: every
    argument required, as ATen's; an int reduction."""
    loss = FUNCTIONAL["poisson_nll_loss"](input, target, log_input, full, eps=eps,
                                          reduction="none")
    return _reduce("poisson_nll_loss", loss, reduction)


@public(top=True, functional=False, name="triplet_margin_loss")
def triplet_margin_loss_top(anchor: Tensor, positive: Tensor, negative: Tensor, margin=1.0,
                            p=2.0, eps=1e-6, swap=False, reduction=0) -> Tensor:
    """``torch.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
    reduction)``: an int reduction; unreduced by default."""
    loss = FUNCTIONAL["triplet_margin_loss"](anchor, positive, negative, margin, p, eps, swap,
                                             reduction="none")
    return _reduce("triplet_margin_loss", loss, reduction)


@public(top=True, functional=False, name="ctc_loss")
def ctc_loss_top(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank=0,
                 reduction=0, zero_infinity=False) -> Tensor:
    """``torch.ctc_loss``: ``F.ctc_loss`` with an int reduction (1: the mean of the losses
    divided by their target lengths, as F's "mean"); unreduced by default."""
    how = _REDUCTIONS.get(reduction, reduction) if type(reduction) is int else reduction
    if how not in ("none", "mean", "sum"):
        raise ValueError(f"ctc_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction!r}")
    return FUNCTIONAL["ctc_loss"](log_probs, targets, input_lengths, target_lengths, blank,
                                  reduction=how, zero_infinity=zero_infinity)


# ---------------------------------------------------------------- layers' functions


@public(top=True, functional=False, name="embedding")
def embedding_top(weight: Tensor, indices: Tensor, padding_idx=-1, scale_grad_by_freq=False,
                  sparse=False) -> Tensor:
    """``torch.embedding(weight, indices, padding_idx=-1, ...)``: the rows of ``weight``
    (weight first, unlike ``F.embedding``); a ``padding_idx`` >= 0 gets no gradient, and
    a negative one means none (ATen's)."""
    return FUNCTIONAL["embedding"](indices, weight, None if padding_idx < 0 else padding_idx,
                                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@public(top=True, functional=False, name="layer_norm")
def layer_norm_top(input: Tensor, normalized_shape, weight=None, bias=None, eps=1e-5,  # noqa: A002
                   cudnn_enable=True) -> Tensor:
    """``torch.layer_norm``: ``F.layer_norm`` (``cudnn_enable`` is accepted and unused)."""
    return FUNCTIONAL["layer_norm"](input, normalized_shape, weight, bias, eps)


@public(top=True, functional=False, name="group_norm")
def group_norm_top(input: Tensor, num_groups, weight=None, bias=None, eps=1e-5,  # noqa: A002
                   cudnn_enabled=True) -> Tensor:
    """``torch.group_norm``: ``F.group_norm`` (``cudnn_enabled`` is accepted and unused)."""
    return FUNCTIONAL["group_norm"](input, num_groups, weight, bias, eps)


@public(top=True, functional=False, name="batch_norm")
def batch_norm_top(input: Tensor, weight, bias, running_mean, running_var, training,  # noqa: A002
                   momentum, eps, cudnn_enabled) -> Tensor:
    """``torch.batch_norm(input, weight, bias, running_mean, running_var, training,
    momentum, eps, cudnn_enabled)``: ATen's order (F's puts the running statistics
    first); every argument required, as ATen's."""
    return FUNCTIONAL["batch_norm"](input, running_mean, running_var, weight, bias, training,
                                    momentum, eps)


@public(top=True, functional=False, name="instance_norm")
def instance_norm_top(input: Tensor, weight, bias, running_mean, running_var,  # noqa: A002
                      use_input_stats, momentum, eps, cudnn_enabled) -> Tensor:
    """``torch.instance_norm(input, weight, bias, running_mean, running_var,
    use_input_stats, momentum, eps, cudnn_enabled)``: ATen's order, every argument
    required."""
    return FUNCTIONAL["instance_norm"](input, running_mean, running_var, weight, bias,
                                       use_input_stats, momentum, eps)


@public(top=True, functional=False, name="adaptive_avg_pool1d")
def adaptive_avg_pool1d_top(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """``torch.adaptive_avg_pool1d``: ``F.adaptive_avg_pool1d``."""
    return FUNCTIONAL["adaptive_avg_pool1d"](input, output_size)


@public(top=True, functional=False, name="adaptive_max_pool1d")
def adaptive_max_pool1d_top(input: Tensor, output_size) -> tuple:  # noqa: A002
    """``torch.adaptive_max_pool1d``: always ``(values, indices)``, as ATen's."""
    return FUNCTIONAL["adaptive_max_pool1d"](input, output_size, return_indices=True)


@public(top=True, functional=False, name="max_pool3d")
def max_pool3d_top(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                   ceil_mode=False) -> Tensor:
    """``torch.max_pool3d``: ``F.max_pool3d`` (an empty ``stride`` is the kernel size)."""
    stride = None if stride is None or (not isinstance(stride, int) and not len(stride)) \
        else stride
    return FUNCTIONAL["max_pool3d"](input, kernel_size, stride, padding, dilation, ceil_mode)


@public(top=True, functional=False, name="max_pool1d_with_indices")
def max_pool1d_with_indices_top(input: Tensor, kernel_size, stride=(), padding=0,  # noqa: A002
                                dilation=1, ceil_mode=False) -> tuple:
    """``torch.max_pool1d_with_indices``: ``(values, indices)`` of ``F.max_pool1d``."""
    stride = None if stride is None or (not isinstance(stride, int) and not len(stride)) \
        else stride
    return FUNCTIONAL["max_pool1d"](input, kernel_size, stride, padding, dilation, ceil_mode,
                                    return_indices=True)


@public(top=True, functional=False, name="pdist")
def pdist_top(input: Tensor, p=2.0) -> Tensor:  # noqa: A002
    """``torch.pdist``: ``F.pdist``."""
    return FUNCTIONAL["pdist"](input, p)


@public(top=True, functional=False)
def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:  # noqa: A002
    """``F.pad(input, pad, "constant", value)`` (PyTorch's pad order, last dim first)."""
    return FUNCTIONAL["pad"](input, pad, "constant", value)


@public(top=True, functional=False)
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad=0) -> Tensor:  # noqa: A002
    """A 1-d convolution of a (time, batch, channels) input with a (kernel, in, out) weight
    and an (out,) bias, zero-padded by ``pad`` on both ends: (time', batch, out)."""
    out = FUNCTIONAL["conv1d"](input.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                               padding=pad)
    return out.permute(2, 0, 1)


@public(top=True, functional=False, name="is_signed")
def is_signed_top(input: Tensor) -> bool:  # noqa: A002
    """``torch.is_signed(x)``: ``x.is_signed()``."""
    return input.is_signed()


@public(top=True, functional=False)
def chain_matmul(*matrices) -> Tensor:
    """The product of the 2-d ``matrices`` (PyTorch's deprecated form of
    ``linalg.multi_dot``, which takes a list; one matrix is returned as a copy)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two "
                  "or more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        if matrices[0].ndim != 2:
            raise RuntimeError(f"chain_matmul: expected 2D tensors, got {matrices[0].ndim}D")
        return matrices[0].clone()
    return multi_dot(matrices)


# ---------------------------------------------------------------- dropouts, train required


def _dropout_form(name: str, in_place: bool):
    op = FUNCTIONAL[name]

    def fn(input: Tensor, p, train) -> Tensor:  # noqa: A002
        return op(input, p, flag(name, "train", train), in_place)

    fn.__name__ = fn.__qualname__ = name + "_" * in_place
    fn.__doc__ = (f"``torch.{fn.__name__}(input, p, train)``: ``F.{name}`` with "
                  f"``train`` required{', written into input' if in_place else ''}.")
    return public(top=True, functional=False, name=fn.__name__)(fn)


for _name in ("alpha_dropout", "feature_alpha_dropout"):
    _dropout_form(_name, False)
for _name in ("dropout", "alpha_dropout", "feature_alpha_dropout"):
    _dropout_form(_name, True)


@public(top=True, functional=False)
def feature_dropout(input: Tensor, p, train) -> Tensor:  # noqa: A002
    """Whole channels (dim 1) of an (N, C, ...) input zeroed with probability ``p``, the
    rest scaled by 1 / (1 - p), when ``train`` (what ``F.dropout1d/2d/3d`` call)."""
    return _feature_dropout(input, p, train, False)


@public(top=True, functional=False)
def feature_dropout_(input: Tensor, p, train) -> Tensor:  # noqa: A002
    """:func:`feature_dropout` written into ``input``."""
    return _feature_dropout(input, p, train, True)


def _feature_dropout(input: Tensor, p, train, in_place: bool) -> Tensor:  # noqa: A002
    p = dropout.check_p("feature_dropout", p)
    if not flag("feature_dropout", "train", train) or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError(f"feature_dropout: expected an (N, C, ...) input, got shape "
                           f"{input.shape}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return dropout.finish(input, dropout.apply_dropout(input, p, shape, None), in_place)
