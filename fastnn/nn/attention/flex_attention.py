"""PyTorch's ``torch.nn.attention.flex_attention``: attention whose scores a Python
function changes (``score_mod``) and whose mask a Python function gives (``mask_mod``,
made a :class:`BlockMask` by :func:`create_block_mask`).

fastnn runs it as PyTorch's eager (uncompiled) path does: the whole (B, H, L, S) scores are
made, ``score_mod(score, b, h, q_idx, kv_idx)`` is applied to them at once, the mask keeps
the positions where ``mask_mod(b, h, q_idx, kv_idx)`` is true, and the softmax over the keys
weights the values; the gradients come from the tape, through ``score_mod`` and any tensor
it reads. The index arguments are int64 tensors shaped to broadcast against each other
((B, 1, 1, 1), (1, H, 1, 1), (1, 1, L, 1), (1, 1, 1, S)), where PyTorch vmaps them as
0-d tensors: a mod written with tensor ops (``torch.where(q_idx >= kv_idx, ...)``, indexing
a bias with them, arithmetic) means the same under both, and Python control flow on them
fails under both. A query row that no key is left to (every score masked or -inf) gives
zeros and a log-sum-exp of -inf, as PyTorch's flex_attention (where
``scaled_dot_product_attention`` gives NaN).

A :class:`BlockMask` keeps its ``mask_mod`` and the dense mask it gives; its block layout
(PyTorch's kernels' sparsity) is not kept: ``BLOCK_SIZE`` is recorded for its repr only.
"""

from __future__ import annotations

import inspect
import math
from typing import NamedTuple

from fastnn.api.device import as_device
from fastnn.ops import elementwise, nnops, reduction, structure
from fastnn.ops.creation import arange
from fastnn.ops.tensor import Tensor

__all__ = ["AuxOutput", "AuxRequest", "BlockMask", "and_masks", "create_block_mask",
           "create_mask", "flex_attention", "noop_mask", "or_masks"]


class AuxRequest(NamedTuple):
    """Which extra outputs :func:`flex_attention` returns (``return_aux=``)."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs asked for: each query row's log-sum-exp of its scores, and its
    largest score (after ``score_mod`` and the mask); None where not asked for."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(b, h, q_idx, kv_idx):
    """Keeps every position."""
    return q_idx >= 0


def and_masks(*mask_mods):
    """A mask_mod keeping the positions that every one of ``mask_mods`` keeps."""
    _check_mods("and_masks", mask_mods)

    def mask_mod(b, h, q_idx, kv_idx):
        kept = noop_mask(b, h, q_idx, kv_idx)
        for mod in mask_mods:
            kept = kept & mod(b, h, q_idx, kv_idx)
        return kept

    return mask_mod


def or_masks(*mask_mods):
    """A mask_mod keeping the positions that one of ``mask_mods`` keeps."""
    _check_mods("or_masks", mask_mods)

    def mask_mod(b, h, q_idx, kv_idx):
        kept = ~noop_mask(b, h, q_idx, kv_idx)
        for mod in mask_mods:
            kept = kept | mod(b, h, q_idx, kv_idx)
        return kept

    return mask_mod


def _check_mods(name, mods) -> None:
    for mod in mods:
        if not callable(mod):
            raise RuntimeError(f"{name}: every mask_mod must be callable, got "
                               f"{type(mod).__name__}")


def _indices(batch, heads, q_len, kv_len, device) -> tuple:
    """(b, h, q_idx, kv_idx): int64 aranges shaped to broadcast over (B, H, L, S)."""
    return (arange(batch, device=device).reshape(batch, 1, 1, 1),
            arange(heads, device=device).reshape(1, heads, 1, 1),
            arange(q_len, device=device).reshape(1, 1, q_len, 1),
            arange(kv_len, device=device).reshape(1, 1, 1, kv_len))


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None) -> Tensor:
    """The dense bool mask (B or 1, H or 1, Q_LEN, KV_LEN) of a mask_mod (four arguments),
    or the positions a score_mod (five) leaves above -inf."""
    batch, heads = B or 1, H or 1
    b, h, q_idx, kv_idx = _indices(batch, heads, Q_LEN, KV_LEN, device)
    shape = (batch, heads, Q_LEN, KV_LEN)
    if _arity(mod_fn) == 5:
        zeros = elementwise.mul(q_idx + kv_idx, 0.0)
        kept = mod_fn(zeros, b, h, q_idx, kv_idx) > -math.inf
    else:
        kept = mod_fn(b, h, q_idx, kv_idx)
    if not isinstance(kept, Tensor) or kept.dtype.name != "bool":
        raise RuntimeError(f"create_mask: the mask_mod must return a bool tensor, got "
                           f"{getattr(kept, 'dtype', type(kept).__name__)}")
    return kept.expand(*shape).contiguous()


def _arity(fn) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 4


class BlockMask:
    """A mask for :func:`flex_attention`, made by :func:`create_block_mask`: its
    ``mask_mod``, ``shape`` (B, H, Q_LEN, KV_LEN) and the dense bool mask it gives."""

    def __init__(self, mask_mod, shape, dense, block_size):
        self.mask_mod, self.shape, self._dense = mask_mod, tuple(shape), dense
        self.BLOCK_SIZE = block_size

    @property
    def seq_lengths(self) -> tuple:
        """(Q_LEN, KV_LEN)."""
        return self.shape[-2:]

    def to_dense(self) -> Tensor:
        """The mask, one bool a position (PyTorch's gives one a block)."""
        return self._dense

    def to(self, device) -> BlockMask:
        """This mask on ``device``."""
        return BlockMask(self.mask_mod, self.shape, self._dense.to(device), self.BLOCK_SIZE)

    def __repr__(self) -> str:
        kept = float(self._dense.float().mean())
        return f"BlockMask(shape={self.shape}, sparsity={100 * (1 - kept):.2f}%)"


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128,
                      _compile=False, separate_full_blocks=True,
                      compute_dq_write_order=False, dq_kv_order=True) -> BlockMask:
    """The :class:`BlockMask` of ``mask_mod(b, h, q_idx, kv_idx)`` for B batches and H heads
    (None: one, broadcast to any), Q_LEN queries and KV_LEN keys."""
    if not callable(mask_mod):
        raise RuntimeError(f"create_block_mask: mask_mod must be callable, got "
                           f"{type(mask_mod).__name__}")
    device = None if device is None else as_device(device)
    dense = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    return BlockMask(mask_mod, dense.shape, dense, BLOCK_SIZE)


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *,
                   return_aux=None):
    """softmax(score_mod(q k^T * scale) where the mask keeps it) @ v over (B, H, L, E)
    queries and (B, H_kv, S, E) keys, (B, H_kv, S, Ev) values (H_kv = H unless
    ``enable_gqa``, where H_kv divides H). ``return_lse``: also each row's log-sum-exp
    (B, H, L); ``return_aux=AuxRequest(lse=, max_scores=)``: (out, AuxOutput)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim != 4:
            raise ValueError(f"flex_attention: {name} must be a 4-d (B, H, L, E) tensor, got "
                             f"{tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    batch, heads, q_len, dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if kv_heads != heads:
        if not enable_gqa or heads % kv_heads:
            raise ValueError(f"flex_attention: query has {heads} heads and key {kv_heads}; "
                             f"pass enable_gqa=True where the key's heads divide the query's")
        key = structure.repeat_interleave(key, heads // kv_heads, dim=1)
        value = structure.repeat_interleave(value, heads // kv_heads, dim=1)
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    scores = nnops.matmul(query, key.transpose(-2, -1)) * scale
    if score_mod is not None:
        b, h, q_idx, kv_idx = _indices(batch, heads, q_len, kv_len, query.device)
        scores = score_mod(scores, b, h, q_idx, kv_idx)
    if block_mask is not None:
        if not isinstance(block_mask, BlockMask):
            raise TypeError(f"flex_attention: block_mask must be a BlockMask (from "
                            f"create_block_mask), got {type(block_mask).__name__}")
        if tuple(block_mask.seq_lengths) != (q_len, kv_len):
            raise ValueError(f"flex_attention: the block_mask is for {block_mask.seq_lengths} "
                             f"(Q_LEN, KV_LEN), the query and key give {(q_len, kv_len)}")
        scores = elementwise.where(block_mask.to_dense(), scores, -math.inf)
    alive = reduction.any(scores > -math.inf, -1, keepdim=True)  # rows with a key left
    finite = elementwise.where(alive, scores, 0.0)
    probs = nnops.softmax(finite, -1) * alive
    out = nnops.matmul(probs.to(value.dtype), value)
    if return_aux is None and not return_lse:
        return out
    lse = elementwise.where(alive, reduction.logsumexp(finite, -1, keepdim=True),
                            -math.inf).squeeze(-1)
    if return_aux is None:
        return out, lse
    max_scores = reduction.amax(scores, -1) if return_aux.max_scores else None
    return out, AuxOutput(lse if return_aux.lse else None, max_scores)
