"""What PyTorch's TransformerEncoder gives on its nested-tensor path, without nested tensors.

In eval mode, with a ``src_key_padding_mask`` and nothing to differentiate (grad off, or
neither ``src`` nor the first layer's weights requiring it), PyTorch's encoder packs the
batch into a nested tensor, runs the layers on the sequences' real frames and pads the
result back with zeros: the padded frames of the output are 0 (then the final ``norm``,
if any, maps them to its bias). Scripts see this (a mean over the frames in eval differs
from one in training), so fastnn gives the same values.

PyTorch takes the path only when the layer allows it (checked once, at construction:
:func:`nested_path_refusal`) and the call allows it (:func:`takes_nested_path`). With
``mask_check`` (the default) the mask must be left aligned, every sequence's frames
first; the check is a 0-d tensor here, so a compiled step records no branch. Without it,
PyTorch keeps each sequence's first (number of real frames) frames, whatever the mask.
"""

from __future__ import annotations

from fastnn.autocast_mode import is_autocast_enabled
from fastnn.autograd.grad_mode import is_grad_enabled
from fastnn.nn.activation_classes import GELU, ReLU
from fastnn.ops import activations
from fastnn.ops.creation import arange


def nested_path_refusal(layer) -> str:
    """Why PyTorch's encoder built from copies of the TransformerEncoderLayer ``layer``
    never takes its nested path ('' when it may), as PyTorch's ``__init__`` decides it."""
    attn, act = layer.self_attn, layer.activation
    refusals = (
        (layer.norm_first, "encoder_layer.norm_first was True"),
        (not attn.batch_first, "encoder_layer.self_attn.batch_first was not True"),
        (not attn._qkv_same_embed_dim, "encoder_layer.self_attn._qkv_same_embed_dim was "
                                       "not True"),
        (attn.in_proj_bias is None, "encoder_layer.self_attn was passed bias=False"),
        (not (act is activations.relu or act is activations.gelu
              or isinstance(act, (ReLU, GELU))),
         "encoder_layer.activation_relu_or_gelu was not True"),
        (layer.norm1.eps != layer.norm2.eps, "encoder_layer.norm1.eps was not equal to "
                                             "encoder_layer.norm2.eps"),
        (attn.num_heads % 2 == 1, "encoder_layer.self_attn.num_heads is odd"),
    )
    return next((why for refused, why in refusals if refused), "")


def takes_nested_path(encoder, src, mask, padding) -> bool:
    """Whether PyTorch's ``encoder(src, mask, padding)`` runs on nested tensors (the mask's
    alignment aside: :func:`nested_padding` folds that in)."""
    first = encoder.layers[0]
    if (not getattr(encoder, "use_nested_tensor", False) or first.training or src.ndim != 3
            or padding is None or mask is not None or is_autocast_enabled()):
        return False
    if not is_grad_enabled():
        return True
    attn = first.self_attn
    weights = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
               attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
               first.norm2.bias, first.linear1.weight, first.linear1.bias,
               first.linear2.weight, first.linear2.bias)
    return not any(t is not None and t.requires_grad for t in weights)


def nested_padding(padding, mask_check: bool):
    """(the key padding mask the layers take, the (N, T) frames to zero) on the nested path.

    ``padding`` is PyTorch's (N, T) mask, bool (True: padded) or float (0: a real frame,
    anything else padded, as PyTorch's ``logical_not`` reads it)."""
    padded = padding if padding.dtype.name == "bool" else padding != 0
    frames = padded.shape[-1]
    real = frames - padded.sum(-1, keepdim=True)
    outside_prefix = arange(frames, device=padded.device) >= real  # (N, T)
    if not mask_check:
        return outside_prefix, outside_prefix
    left_aligned = (outside_prefix == padded).all()  # 0-d: the path is taken when true
    return padding, padded & left_aligned
