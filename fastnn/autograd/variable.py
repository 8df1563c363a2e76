"""PyTorch's legacy ``torch.autograd.Variable``: since PyTorch 0.4 every tensor is one.

``Variable(t, requires_grad=False)`` gives a new leaf sharing ``t``'s storage (what
``t.detach()`` gives) with ``requires_grad`` as asked, as PyTorch's; ``isinstance(t,
Variable)`` holds for every tensor. Older scripts (``Variable(x)``, ``Variable(w,
requires_grad=True)``) run unchanged.
"""

from __future__ import annotations

__all__ = ["Variable"]

# the tensor class, told by fastnn.ops.tensor when it is defined (this layer sits below it)
TENSOR: list = []


class _VariableType(type):
    def __instancecheck__(cls, obj) -> bool:
        return bool(TENSOR) and isinstance(obj, TENSOR[0])


class Variable(metaclass=_VariableType):
    """``Variable(t, requires_grad=False, volatile=False)``: t's storage as a new leaf (see
    the module); ``volatile`` is accepted and ignored, as in PyTorch."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not (TENSOR and isinstance(data, TENSOR[0])):
            raise TypeError(f"Variable: data must be a Tensor, got {type(data).__name__}; "
                            f"make one with fnn.tensor(...)")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
