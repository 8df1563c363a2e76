"""The rest of PyTorch's activation functions, as compositions of tensor ops (gradients from
theirs): celu, relu6, hardsigmoid, hardswish, softsign, logsigmoid, softmin, softshrink,
hardshrink, tanhshrink, threshold, rrelu and prelu. Each is ``F.NAME``, and also
``fnn.NAME`` / ``Tensor.NAME`` where PyTorch has those; ``inplace=True`` writes the result
into the input, as PyTorch's."""

from __future__ import annotations

from fastnn.api.args import real
from fastnn.ops import elementwise as ew
from fastnn.ops import nnops
from fastnn.ops.activations import (
    _floating,
    clip_flat,
    integer_clip,
    softplus,
    tanh,
    written,
)
from fastnn.ops.core import astype
from fastnn.ops.rng_state import rng_of
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor, tensor

where = ew.where




def _zero_like(x: Tensor) -> Tensor:
    return ew.mul(x, 0.0)


@public(top=True)
def celu(x, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if inplace:
        return written(x, lambda t: celu(t, alpha))
    alpha = real("celu", "alpha", alpha)
    if alpha == 0:
        raise ValueError("celu: alpha must be nonzero (it divides x)")
    z = _floating("celu", x)
    not_positive = where(ew.compare("greater", z, 0.0), 0.0, z)  # slope 1 at 0, as PyTorch's
    negative = ew.mul(ew.add(ew.exp(ew.div(not_positive, alpha)), -1.0), alpha)
    return where(ew.compare("greater", z, 0.0), z, negative)


@public()
def relu6(x, inplace=False):
    """min(max(x, 0), 6)."""
    if inplace:
        return written(x, relu6)
    if isinstance(x, Tensor) and not x._dtype.is_floating and x._dtype.name != "bool":
        return integer_clip(x, 0.0, 6.0)
    z = _floating("relu6", x)
    return clip_flat(z, 0.0, 6.0)


@public()
def hardsigmoid(x, inplace=False):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    if inplace:
        return written(x, hardsigmoid)
    z = _floating("hardsigmoid", x)
    return clip_flat(ew.add(ew.div(z, 6.0), 0.5), 0.0, 1.0)


@public()
def hardswish(x, inplace=False):
    """x * relu6(x + 3) / 6."""
    if inplace:
        return written(x, hardswish)
    z = _floating("hardswish", x)
    # PyTorch's pieces (and its slopes at -3 and 3): 0, x (x + 3) / 6, x
    z_mid = where(ew.compare("less", ew.abs(z.detach()), 3.0), z, 0.0)  # no inf * inf
    middle = ew.div(ew.mul(z_mid, ew.add(z_mid, 3.0)), 6.0)
    upper = where(ew.compare("less", z, 3.0), middle, z)
    return where(ew.compare("greater", z, -3.0), upper, _zero_like(z))


@public()
def softsign(x):
    """x / (1 + |x|)."""
    z = _floating("softsign", x)
    return ew.div(z, ew.add(ew.abs(z), 1.0))


@public()
def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    z = _floating("logsigmoid", x)
    return ew.neg(softplus(ew.neg(z)))


@public()
def softmin(x, dim=None, dtype=None):
    """softmax(-x) along ``dim`` (PyTorch's implicit dim, with its warning, when None);
    ``dtype=`` converts x first."""
    z = _floating("softmin", x)
    if dtype is not None:
        z = astype(z, dtype)
    if dim is None:
        dim = nnops.implicit_dim("softmin", z.ndim)
    return nnops.softmax(ew.neg(z), dim)


@public()
def softshrink(x, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    lambd = real("softshrink", "lambd", lambd)
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}")
    z = _floating("softshrink", x)
    low = where(ew.compare("less", z, -lambd), ew.add(z, lambd), _zero_like(z))
    return where(ew.compare("greater", z, lambd), ew.sub(z, lambd), low)


@public(method=True, top=True)
def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, else 0."""
    lambd = real("hardshrink", "lambd", lambd)
    z = _floating("hardshrink", x)
    outside = ew.compare("greater", ew.abs(z.detach()), lambd)
    return where(outside, z, _zero_like(z))


@public()
def tanhshrink(x):
    """x - tanh(x)."""
    z = _floating("tanhshrink", x)
    return ew.sub(z, tanh(z))


@public(top=True)
def threshold(x, threshold, value, inplace=False):
    """x where x > threshold, else ``value``."""
    if inplace:
        return written(x, lambda t: _threshold(t, threshold, value))
    threshold, value = real("threshold", "threshold", threshold), real("threshold", "value",
                                                                       value)
    if not isinstance(x, Tensor):
        raise TypeError(f"threshold: expected a Tensor, got {type(x).__name__}")
    # x <= threshold takes value (so NaN stays NaN, as PyTorch's)
    drop = ew.compare("equal", ew.compare("greater", x, threshold), 0)
    if x._dtype.is_floating:
        drop = drop & ew.compare("equal", x.detach(), x.detach())
    fill = value if x._dtype.is_floating else int(value)
    return where(drop, fill, x)


_threshold = threshold  # (inside it, the name is its argument)


@public(top=True)
def rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, *, generator=None):
    """Randomized leaky ReLU: below 0, x times a slope drawn uniformly from [lower, upper]
    per element when ``training``, else times (lower + upper) / 2."""
    if inplace:
        return written(x, lambda t: rrelu(t, lower, upper, training, generator=generator))
    lower, upper = real("rrelu", "lower", lower), real("rrelu", "upper", upper)
    if lower > upper:
        raise ValueError(f"rrelu: lower {lower} is above upper {upper}")
    z = _floating("rrelu", x)
    if training:
        draws = rng_of("rrelu", generator).uniform(lower, upper, z.shape)
        slope = tensor(draws, dtype=z._dtype, device=z._device)
    else:
        slope = (lower + upper) / 2
    positive = ew.compare("greater", z.detach(), 0.0)
    return where(positive, z, ew.mul(z, slope))


@public(method=True, top=True)
def prelu(x, weight):
    """x where x > 0, else weight * x; ``weight`` has 1 element or one per channel (dim 1
    of x, dim 0 of a 1-D x)."""
    z = _floating("prelu", x)
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu: weight must be a Tensor, got {type(weight).__name__}")
    count = weight.numel()
    channels = z.shape[1] if z.ndim >= 2 else (z.shape[0] if z.ndim == 1 else 1)
    if weight.ndim > 1 or count not in (1, channels):
        raise ValueError(f"prelu: weight must have 1 element or one per channel ({channels}), "
                         f"got shape {weight.shape}")
    w = weight if weight._dtype is z._dtype else astype(weight, z._dtype)
    if count > 1 and z.ndim >= 2:
        w = w.reshape((channels,) + (1,) * (z.ndim - 2))
    elif count == 1:
        w = w.reshape(())
    return where(ew.compare("greater", z.detach(), 0.0), z, ew.mul(z, w))
