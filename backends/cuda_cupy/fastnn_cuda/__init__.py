"""fastnn's CUDA backend: the hook specification on cupy arrays, plus fused CUDA kernels.

Registered as ``cuda`` in the ``fastnn.backends`` entry-point group (devices
``cuda``, ``cuda:N``). Primitives are cupy calls (matmul through cuBLAS);
the fused hooks and the optimizer steps are raw kernels from ``cu/*.cu``,
compiled with NVRTC on first use. Importing this package never fails: without
cupy or a driver, :func:`backend_probe` reports why, with the install hint.

Layout: ``primitives.py`` (elementwise, reductions, data movement, matmul),
``conv.py`` (im2col + GEMM), ``fused.py`` (softmax, cross-entropy, rms_div,
bias + activation, and the backward passes of the last two), ``optim.py``
(SGD/Adam/RMSProp in one launch), ``kernels.py`` (sources and compilation),
``launch.py`` (launch parameters), ``collectives.py`` (allreduce and broadcast
through NCCL).
"""

from __future__ import annotations

import functools

from fastnn.api.hookspec import hookimpl
from fastnn_cuda import _cupy
from fastnn_cuda.collectives import allreduce, broadcast  # noqa: F401
from fastnn_cuda.conv import conv1d, conv1d_grad_input, conv1d_grad_weight  # noqa: F401
from fastnn_cuda.conv_2d import conv2d, conv2d_grad_input, conv2d_grad_weight  # noqa: F401
from fastnn_cuda.fused import (  # noqa: F401
    bias_act,
    bias_act_backward,
    log_softmax,
    rms_div,
    softmax,
    softmax_cross_entropy,
    softmax_cross_entropy_backward,
)
from fastnn_cuda.indexing import (  # noqa: F401
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cat,
    cos,
    cumsum,
    floor,
    floor_divide,
    gather,
    index_select,
    prod,
    scatter_add,
    sin,
    slice,
    slice_scatter,
)
from fastnn_cuda.optim import (  # noqa: F401
    adagrad_step,
    adam_step,
    amsgrad_step,
    nadam_step,
    radam_step,
    rmsprop_momentum_step,
    rmsprop_step,
    sgd_step,
)
from fastnn_cuda.primitives import (  # noqa: F401
    abs,
    add,
    argmax,
    astype,
    broadcast_to,
    contiguous,
    div,
    equal,
    erf,
    exp,
    from_numpy,
    full,
    gelu,
    greater,
    leaky_relu,
    less,
    log,
    matmul,
    max,
    maximum,
    mean,
    minimum,
    mul,
    neg,
    one_hot,
    pow,
    relu,
    reshape,
    sigmoid,
    sign,
    silu,
    softplus,
    sqrt,
    sub,
    sum,
    tanh,
    to_numpy,
    transpose,
    uniform,
    where,
)


@hookimpl
def backend_probe():
    return _cupy.probe()


# Hooks whose first argument is a device array (or a list of them): with more
# than one GPU they run with the current device set to that array's device.
_ON_ARRAY_DEVICE = (
    "astype neg exp log sqrt abs sign erf tanh sigmoid relu leaky_relu gelu silu softplus "
    "add sub mul div pow maximum minimum greater less equal where sum mean max argmax "
    "reshape transpose broadcast_to contiguous one_hot matmul conv1d conv1d_grad_input "
    "conv1d_grad_weight conv2d conv2d_grad_input conv2d_grad_weight softmax log_softmax "
    "softmax_cross_entropy "
    "softmax_cross_entropy_backward rms_div bias_act bias_act_backward "
    "sgd_step adam_step rmsprop_step amsgrad_step rmsprop_momentum_step adagrad_step "
    "radam_step nadam_step "
    "slice slice_scatter gather scatter_add index_select cat cumsum prod floor sin cos "
    "floor_divide bitwise_and bitwise_or bitwise_xor"
).split()


def on_array_device(fn):
    """Wrap a hook so that it runs on the device of its first array argument.

    ``functools.wraps`` keeps the signature (pluggy reads it through
    ``__wrapped__``) and the ``@hookimpl`` marker.
    """
    device_type = _cupy.cupy.cuda.Device

    @functools.wraps(fn)
    def run(*args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()))
        if isinstance(first, (list, tuple)):
            first = first[0] if first else None
        device = getattr(first, "device", None)
        if device is None:
            return fn(*args, **kwargs)
        with device_type(device.id):
            return fn(*args, **kwargs)

    return run


def _guard_devices(namespace: dict) -> None:
    for name in _ON_ARRAY_DEVICE:
        namespace[name] = on_array_device(namespace[name])


if _cupy.device_count() > 1:  # one GPU: the current device is always the right one
    _guard_devices(globals())
