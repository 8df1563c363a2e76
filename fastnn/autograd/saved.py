"""What a recorded op keeps for its backward, where PyTorch's choice matters: a later
in-place write to a kept tensor is refused ("modified by an in-place operation"), so
fastnn keeps what PyTorch keeps and a PyTorch script's writes pass or fail alike."""

from __future__ import annotations

# what composite.activation_grad (and a backend's fused gradient) reads of (z, out) for
# each activation kind, as PyTorch's saved tensors: relu, sigmoid and tanh their result,
# the others their input (gelu both: the fused hook recovers the cdf from out)
GRAD_READS = {"relu": (False, True), "sigmoid": (False, True), "tanh": (False, True),
              "leaky_relu": (True, False), "silu": (True, False), "softplus": (True, False),
              "gelu": (True, True)}


# ops whose rule reads their own output where PyTorch's keeps something else (gelu: the
# fused gradient recovers the cdf from out, PyTorch's GeluBackward saves self; max
# pooling: PyTorch saves the indices): a write into the output
# (fastnn.ops.storage.write) gives the node a copy of the old values instead of making
# it stale, so that y = F.gelu(x); y += r and nn.MaxPool2d then nn.ReLU(inplace=True)
# pass backward, as in PyTorch
OUTPUT_COPIED_ON_WRITE = frozenset({"gelu", "max_pool2d"})


def saved_for_grad(kind: str, z, out) -> tuple:
    """(z, out) with None for what the kind's gradient does not read (:data:`GRAD_READS`)."""
    reads_z, reads_out = GRAD_READS[kind]
    return (z if reads_z else None, out if reads_out else None)
