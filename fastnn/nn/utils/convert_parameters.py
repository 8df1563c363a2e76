"""``parameters_to_vector`` and ``vector_to_parameters``, as PyTorch's: every parameter
flattened into one 1-D tensor (in the order given), and back."""

from __future__ import annotations

from fastnn.ops.joining import cat
from fastnn.ops.tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor of every parameter's values, flattened, in order (differentiable)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: no parameters given")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter, in order, the next slice of the 1-D ``vec``, as PyTorch's: the
    parameters then view ``vec``'s storage (``param.data = slice``), so a later in-place
    write to ``vec`` is seen by them and the other way round; elements of ``vec`` past the
    parameters' total are left unused."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got "
                        f"{getattr(vec, 'shape', type(vec).__name__)}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() < total:
        raise ValueError(f"vector_to_parameters: the vector has {vec.numel()} elements, the "
                         f"parameters {total}")
    start = 0
    for p in params:
        if p.device != vec.device:
            raise TypeError(f"vector_to_parameters: found two parameters on different "
                            f"devices, {vec.device} (the vector) and {p.device}; move them "
                            f"to one device")
        n = p.numel()
        p.data = vec.data[start:start + n].view(p.shape)
        start += n
