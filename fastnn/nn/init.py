"""PyTorch's initialisers (``torch.nn.init``): each fills a tensor in place and returns it.

Every function writes under ``no_grad`` (so a Parameter that requires grad can be
initialised, as in PyTorch), writes through views (``init.zeros_(w[:, :2])`` changes
``w``), works on every device, and draws from fastnn's generator, so ``fnn.manual_seed``
reproduces it. ``generator=`` takes a ``numpy.random.Generator`` to draw from instead
(fastnn has no ``torch.Generator``); the draws are then made on the host and copied in.

The fan rules are PyTorch's: for a weight of shape ``(out, in, *kernel)``,
``fan_in = in * prod(kernel)`` and ``fan_out = out * prod(kernel)``; this matches
``Linear`` (``(out_features, in_features)``) and ``Conv1d``/``Conv2d`` weights.

Example, as PyTorch users write it::

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    model.apply(init_weights)
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings

import numpy as np

from fastnn.autograd.grad_mode import no_grad
from fastnn.ops.tensor import Tensor, host_rng
from fastnn.ops.tensor import tensor as make_tensor

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
               "conv_transpose2d", "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` (a ``functional`` name), as PyTorch's.

    ``linear``, ``conv{1,2,3}d``, ``conv_transpose{1,2,3}d``, ``sigmoid``: 1;
    ``tanh``: 5/3; ``relu``: sqrt(2); ``leaky_relu``: sqrt(2 / (1 + slope**2)) with
    slope ``param`` (default 0.01); ``selu``: 3/4.
    """
    if nonlinearity in _LINEAR_FNS:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4  # PyTorch's empirical value (pytorch/pytorch#50664)
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; expected "
                     f"one of {[*_LINEAR_FNS, 'tanh', 'relu', 'leaky_relu', 'selu']}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple:
    """``(fan_in, fan_out)`` of a weight shaped ``(out, in, *kernel)``, PyTorch's rule."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         f"2 dimensions (got shape {tuple(tensor.shape)})")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# ---------------------------------------------------------------- helpers


def _initialiser(fn):
    """Check that the first argument is a Tensor and run ``fn`` under ``no_grad``."""
    @functools.wraps(fn)
    def wrapper(tensor, *args, **kwargs):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{fn.__name__}: expected a Tensor to fill in place, got "
                            f"{type(tensor).__name__}")
        with no_grad():
            return fn(tensor, *args, **kwargs)
    return wrapper


def _host_rng(op: str, generator) -> np.random.Generator:
    if generator is None:
        return host_rng()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(getattr(generator, "rng", None), np.random.Generator):  # an fnn.Generator
        return generator.rng
    raise TypeError(f"{op}: generator must be None (fastnn's generator, seeded by "
                    f"fnn.manual_seed), an fnn.Generator or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")


def _copy_host(tensor: Tensor, host: np.ndarray) -> Tensor:
    """Write the host array ``host`` (tensor's shape) into ``tensor``, on its device."""
    return tensor.copy_(make_tensor(host, dtype=tensor.dtype, device=tensor.device))


def _uniform(op: str, tensor: Tensor, a: float, b: float, generator) -> Tensor:
    if generator is None:  # drawn on the device, seeded from fastnn's generator
        return tensor.uniform_(a, b)
    return _copy_host(tensor, _host_rng(op, generator).uniform(a, b, tensor.shape))


def _normal(op: str, tensor: Tensor, mean: float, std: float, generator) -> Tensor:
    if generator is None:
        return tensor.normal_(mean, std)
    return _copy_host(tensor, _host_rng(op, generator).normal(mean, std, tensor.shape))


def _zero_elements(op: str, tensor: Tensor) -> bool:
    if 0 in tensor.shape:
        warnings.warn(f"{op}: initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


# ---------------------------------------------------------------- plain fills


@_initialiser
def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with samples of U(a, b), in place; returns it."""
    return _uniform("uniform_", tensor, a, b, generator)


@_initialiser
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``tensor`` with samples of N(mean, std**2), in place; returns it."""
    return _normal("normal_", tensor, mean, std, generator)


@_initialiser
def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill ``tensor`` with N(mean, std**2) truncated to [a, b], in place; returns it.

    Rejection sampling on the host, as PyTorch's: normal proposals when [a, b] holds more
    than 30% of the mass, else uniform proposals on [a, b] accepted with probability
    pdf(x) / pdf(mode), so narrow or far-off intervals stay fast.

    # NOTE: bounds that the tensor's dtype cannot represent exactly (0.1 in float32) are
    # met in float64; the cast may round a value onto the nearest representable bound.
    """
    if b < a:
        raise ValueError(f"trunc_normal_: expected a <= b, got a={a}, b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=3)
    rng = _host_rng("trunc_normal_", generator)
    return _copy_host(tensor, _truncated_normal(rng, tensor.shape, mean, std, a, b))


def _truncated_normal(rng, shape, mean, std, a, b) -> np.ndarray:
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    mass = cdf((b - mean) / std) - cdf((a - mean) / std)
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
    out = np.empty(math.prod(shape))
    pending = np.arange(out.size)
    while pending.size:
        if mass > 0.3:
            draw = rng.normal(mean, std, pending.size)
            accept = (draw >= a) & (draw <= b)
        else:
            draw = rng.uniform(a, b, pending.size)
            log_pdf = -0.5 * ((draw - mean) / std) ** 2
            accept = np.log(rng.uniform(size=pending.size)) <= log_pdf - log_peak
        out[pending[accept]] = draw[accept]
        pending = pending[~accept]
    return out.reshape(shape)


@_initialiser
def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``, in place; returns it."""
    return tensor.fill_(val)


@_initialiser
def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 1, in place; returns it."""
    return tensor.fill_(1.0)


@_initialiser
def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 0, in place; returns it."""
    return tensor.zero_()


@_initialiser
def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity matrix (ones on the main diagonal of a
    possibly non-square matrix), in place; returns it."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    return _copy_host(tensor, np.eye(*tensor.shape))


@_initialiser
def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill the 3-, 4- or 5-D conv weight ``tensor`` with the Dirac delta, in place.

    Output channel ``g * (out // groups) + d`` of each group passes input channel ``d``
    through at the kernel's centre, for ``d < min(out // groups, in)``: a convolution
    with this weight preserves as many input channels as it can. Returns ``tensor``.
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    out_channels, in_channels, *kernel = tensor.shape
    if groups < 1 or out_channels % groups:
        raise ValueError(f"dirac_: dim 0 ({out_channels}) must be divisible by groups "
                         f"({groups})")
    per_group = out_channels // groups
    centre = tuple(k // 2 for k in kernel)
    host = np.zeros(tensor.shape)
    for g in range(groups):
        for d in range(min(per_group, in_channels)):
            host[(g * per_group + d, d, *centre)] = 1
    return _copy_host(tensor, host)


# ---------------------------------------------------------------- scaled by fan


@_initialiser
def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)), in place."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _uniform("xavier_uniform_", tensor, -bound, bound, generator)


@_initialiser
def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out)), in
    place."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _normal("xavier_normal_", tensor, 0.0, std, generator)


@_initialiser
def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan), in place.

    ``fan`` is fan_in or fan_out (``mode``); gain is ``calculate_gain(nonlinearity, a)``
    (``a``: the negative slope of leaky_relu). The fans assume a ``(out, in)`` weight
    used as ``x @ w.T``; for ``x @ w`` pass ``w.T``.
    """
    if _zero_elements("kaiming_uniform_", tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return _uniform("kaiming_uniform_", tensor, -bound, bound, generator)


@_initialiser
def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std**2) with std = gain / sqrt(fan), in place (arguments as
    :func:`kaiming_uniform_`)."""
    if _zero_elements("kaiming_normal_", tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return _normal("kaiming_normal_", tensor, 0.0, std, generator)


# ---------------------------------------------------------------- structured


@_initialiser
def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill ``tensor`` (2 or more dims, seen as ``(size(0), -1)``) with a (semi-)orthogonal
    matrix times ``gain``, in place: W W^T = gain^2 I when rows <= cols, else
    W^T W = gain^2 I.

    The Q of a QR factorisation of a standard normal matrix, each column's sign fixed
    by diag(R) so that Q is uniform on the orthogonal group (Mezzadri 2007), as
    PyTorch's. QR runs in float64 with NumPy on the host; the result is copied in.
    """
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are "
                         f"supported, got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _host_rng("orthogonal_", generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _copy_host(tensor, gain * q.reshape(tensor.shape))


@_initialiser
def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill the 2-D ``tensor`` with N(0, std**2) samples, then zero
    ``ceil(sparsity * rows)`` random entries of each column, in place (Martens 2010)."""
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    rows, cols = tensor.shape
    rng = _host_rng("sparse_", generator)
    _normal("sparse_", tensor, 0.0, std, generator)
    zeros = np.zeros((rows, cols), dtype=bool)
    for col in range(cols):
        zeros[rng.permutation(rows)[:math.ceil(sparsity * rows)], col] = True
    return tensor.masked_fill_(make_tensor(zeros, device=tensor.device), 0.0)



def _deprecated(fn):
    """``nn.init.<name>`` without the underscore: PyTorch's deprecated spelling, which warns
    (FutureWarning) and initialises in place as ``<name>_``."""
    name = fn.__name__[:-1]

    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    old.__name__ = old.__qualname__ = name
    old.__doc__ = f"Deprecated spelling of :func:`{fn.__name__}` (warns, as PyTorch's)."
    return old


(uniform, normal, constant, eye, dirac, xavier_uniform, xavier_normal, kaiming_uniform,
 kaiming_normal, orthogonal, sparse) = map(_deprecated, (
    uniform_, normal_, constant_, eye_, dirac_, xavier_uniform_, xavier_normal_,
    kaiming_uniform_, kaiming_normal_, orthogonal_, sparse_))

__all__ = [
    "calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_",
    "normal_", "ones_", "orthogonal_", "sparse_", "trunc_normal_", "uniform_",
    "xavier_normal_", "xavier_uniform_", "zeros_",
    # PyTorch's deprecated spellings (they warn)
    "constant", "dirac", "eye", "kaiming_normal", "kaiming_uniform", "normal", "orthogonal",
    "sparse", "uniform", "xavier_normal", "xavier_uniform",
]
