"""PyTorch's ``torch.nn.attention``: the kernel choice of ``scaled_dot_product_attention``
(:func:`sdpa_kernel`, :class:`SDPBackend`, from :mod:`fastnn.nn.sdpa_backends`) and, as a
submodule imported by name, :mod:`~fastnn.nn.attention.flex_attention`."""

from fastnn.nn.sdpa_backends import SDPBackend, sdpa_kernel

__all__ = ["SDPBackend", "sdpa_kernel"]
