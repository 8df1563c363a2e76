"""Gated and dynamic-tanh layers: GatedLinear (GLU / SwiGLU / tanh gate) and DyT.

Both are compositions of tensor ops; ``reverse`` comes from the tape.
"""

from __future__ import annotations

from fastnn.api.args import integer, real
from fastnn.nn.linear import Linear, check_features
from fastnn.nn.module import Module, const_init
from fastnn.ops import activations

GATES = {"sigmoid": activations.sigmoid, "silu": activations.silu, "tanh": activations.tanh}


class GatedLinear(Module):
    """y = value(x) * gate_fn(gate(x)) with two Linear layers ``value`` and ``gate``.

    ``gate="sigmoid"`` is the GLU of Dauphin et al., ``"silu"`` SwiGLU, ``"tanh"`` a tanh
    gate. Parameters ``value.weight``, ``value.bias``, ``gate.weight``, ``gate.bias`` in
    PyTorch's (out, in) layout.
    """

    def __init__(self, in_features: int, out_features: int, gate: str = "sigmoid",
                 bias: bool = True, dtype=None, device=None):
        super().__init__()
        if gate not in GATES:
            raise ValueError(f"GatedLinear: gate must be one of {sorted(GATES)}, got {gate!r}")
        self.gate_kind = gate
        self.value = Linear(in_features, out_features, bias, dtype=dtype, device=device)
        self.gate = Linear(in_features, out_features, bias, dtype=dtype, device=device)

    def extra_repr(self) -> str:
        return (f"in_features={self.value.in_features}, "
                f"out_features={self.value.out_features}, gate={self.gate_kind!r}")

    def forward(self, x):
        return self.value(x) * GATES[self.gate_kind](self.gate(x))


class DyT(Module):
    """Dynamic tanh, a normalization-free stand-in for LayerNorm:
    y = tanh(alpha * x) * weight + bias over the last axis.

    alpha (1,) of class other starts at ``alpha_init``; weight (features,) connective at 1;
    bias (features,) at 0.
    """

    def __init__(self, features: int, alpha_init: float = 0.5, dtype=None, device=None):
        super().__init__()
        self.features = integer("DyT", "features", features)
        self.alpha_init = real("DyT", "alpha_init", alpha_init)
        self.alpha = const_init((1,), self.alpha_init, "other", dtype, device)
        self.weight = const_init((self.features,), 1.0, "connective", dtype, device)
        self.bias = const_init((self.features,), 0.0, "bias", dtype, device)

    def extra_repr(self) -> str:
        return f"{self.features}, alpha_init={self.alpha_init}"

    def forward(self, x):
        check_features(f"DyT({self.features})", x, self.features, "features")
        return activations.tanh(x * self.alpha) * self.weight + self.bias
