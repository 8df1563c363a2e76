"""``torch.nn.attention``'s kernel choice for ``scaled_dot_product_attention``:
``SDPBackend`` and the ``sdpa_kernel`` context manager.

PyTorch picks one of several kernels (math, flash, memory-efficient, cuDNN) and
``sdpa_kernel`` narrows the choice; fastnn's attention is one op of each backend (its own
fused kernel where it has one), so every choice runs it and gives its result: the
context manager checks what it is given and changes nothing.
"""

from __future__ import annotations

import contextlib
import enum


class SDPBackend(enum.IntEnum):
    """The kernels of PyTorch's scaled_dot_product_attention (its values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Run the block with ``backends`` (an SDPBackend or a list of them) allowed; fastnn
    has one attention op per device, which every choice runs."""
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    wrong = [b for b in chosen if not isinstance(b, SDPBackend)]
    if not chosen or wrong:
        raise TypeError(f"sdpa_kernel: backends must be SDPBackend members (or a list of "
                        f"them), got {backends!r}")
    yield
