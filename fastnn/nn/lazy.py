"""PyTorch's lazy modules: layers whose input size (``in_features``, ``in_channels``,
``num_features``) comes from the first input they see.

Until that first call their parameters (and BatchNorm's running statistics) are
:class:`~fastnn.nn.UninitializedParameter` / :class:`~fastnn.nn.UninitializedBuffer`
placeholders, which refuse to be used. The first forward (or ``reverse``, or
``initialize_parameters(x)``) materialises them from the input's shape, initialised exactly
as the non-lazy layer's (under the same ``fnn.manual_seed``, ``LazyLinear(3)`` then a
forward over 4 features gives the weights ``Linear(4, 3)`` made then would have), and the
forward turns the module into that non-lazy class (``cls_to_become``), as PyTorch does::

    model = nn.Sequential(nn.LazyConv2d(16, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
    model(fnn.zeros(1, 3, 28, 28))         # the dry run: every lazy layer takes its shape
    opt = fnn.optim.SGD(model.parameters(), lr=0.1)   # only now: see below

PyTorch's rule holds: build the optimizer after a dry-run forward. An optimizer made over
uninitialized parameters would hold placeholders that are then replaced; fastnn's refuses
them with a ValueError saying so. Move the model (``.to(device, dtype)``) before the dry
run or after, as for any module.

``state_dict()`` of an uninitialized lazy module holds the placeholders themselves under
their keys, as PyTorch's; ``load_state_dict`` into one materialises each placeholder with
the shape of the value loaded (PyTorch's load hook), and the next forward finishes the
module. ``has_uninitialized_params()`` says whether any of the module's own parameters or
buffers is still a placeholder.
"""

from __future__ import annotations

import numpy as np

from fastnn.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from fastnn.nn.conv import Conv1d
from fastnn.nn.conv2d import Conv2d
from fastnn.nn.conv3d import Conv3d
from fastnn.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from fastnn.nn.linear import Linear
from fastnn.nn.module import Module, check_tensor
from fastnn.nn.norm_groups import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from fastnn.nn.uninitialized import UninitializedBuffer, UninitializedParameter, is_uninitialized
from fastnn.ops.rng_state import host_rng, set_host_rng

_MODULE_KEYS = frozenset(vars(Module()))  # what every module has: kept, not copied


def _without_draws(build):
    """``build()`` with a throwaway generator: fastnn's own (fnn.manual_seed's) draws nothing."""
    saved = host_rng()
    set_host_rng(np.random.default_rng(0))
    try:
        return build()
    finally:
        set_host_rng(saved)


class LazyModuleMixin:
    """PyTorch's ``nn.modules.lazy.LazyModuleMixin``: placeholders until the first input.

    A lazy class lists it first: ``class LazyLinear(LazyModuleMixin, Linear)``, with
    ``cls_to_become`` the non-lazy class, ``_lazy_dim`` the attribute the input decides
    and ``_infer(x)`` how it does.
    """

    cls_to_become: type | None = None
    _lazy_dim = ""

    def _lazy_setup(self, kwargs: dict, dtype, device) -> None:
        """Build the non-lazy layer with a size of 1 without drawing from fastnn's
        generator, then put placeholders in place of its parameters and float buffers."""
        size = kwargs.get("groups", 1)  # the smallest size the layer accepts
        _without_draws(lambda: self.cls_to_become.__init__(self, size, **kwargs, dtype=dtype,
                                                           device=device))
        object.__setattr__(self, "_lazy_kwargs", kwargs)
        object.__setattr__(self, "_lazy_kind", (dtype, device))
        for name, p in list(self._parameters.items()):
            if p is not None:
                self._parameters[name] = UninitializedParameter(
                    p.requires_grad, p.device, p.dtype, p.param_class)
                object.__setattr__(self, name, self._parameters[name])
        for name, b in list(self._buffers.items()):
            if b is not None and b.dtype.is_floating:
                setattr(self, name, UninitializedBuffer(False, b.device, b.dtype))
        object.__setattr__(self, self._lazy_dim, 0)

    def reset_parameters(self) -> None:
        """PyTorch's: nothing while the parameters are placeholders (the first input draws
        them), the layer's own reset after."""
        if not self.has_uninitialized_params():
            super().reset_parameters()

    def has_uninitialized_params(self) -> bool:
        """Whether any of this module's own parameters or buffers is still a placeholder."""
        return any(is_uninitialized(t) for t in (*self._parameters.values(),
                                                 *self._buffers.values()))

    def _infer(self, x) -> int:
        raise NotImplementedError

    def _placeholder_kind(self):
        """The dtype and device the placeholders have now (after any ``.to``)."""
        for t in (*self._parameters.values(), *self._buffers.values()):
            if is_uninitialized(t):
                return t.dtype, t.device
        for t in (*self._parameters.values(), *self._buffers.values()):
            if t is not None and t.dtype.is_floating:
                return t.dtype, t.device
        return self._lazy_kind

    def initialize_parameters(self, x, *args, **kwargs) -> None:
        """Materialise the placeholders from input ``x``'s shape, initialised as the
        non-lazy layer's (PyTorch's ``initialize_parameters``); the module keeps its lazy
        class until its next forward."""
        check_tensor(type(self).__name__, x)
        size = self._infer(x)
        dtype, device = self._placeholder_kind()
        fresh = self.has_uninitialized_params()

        def build():
            return self.cls_to_become(size, **self._lazy_kwargs, dtype=dtype, device=device)

        template = build() if fresh else _without_draws(build)
        for key, value in vars(template).items():
            if key not in _MODULE_KEYS and key not in template._parameters and \
                    key not in template._buffers and key not in template._modules:
                object.__setattr__(self, key, value)
        for store, made in ((self._parameters, template._parameters),
                            (self._buffers, template._buffers)):
            for name, t in store.items():
                if is_uninitialized(t):
                    t._materialize_data(made[name]._data, made[name].dtype, made[name].device)
                elif t is not None and made[name] is not None and t.shape != made[name].shape:
                    raise ValueError(
                        f"{type(self).__name__}: {name} has shape {t.shape} (loaded), but an "
                        f"input of shape {x.shape} needs {made[name].shape}")

    def _finish(self, args, kwargs) -> None:
        """PyTorch's ``_infer_parameters``: materialise, then become ``cls_to_become``."""
        if not args:
            raise TypeError(f"{type(self).__name__}: a lazy module needs an input to take its "
                            "shape from")
        self.initialize_parameters(*args, **kwargs)
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        self.__dict__.pop("_lazy_kwargs", None)
        self.__dict__.pop("_lazy_kind", None)
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def __call__(self, *args, **kwargs):
        self._finish(args, kwargs)
        return self(*args, **kwargs)

    def reverse(self, x, grad_out, *args, **kwargs):
        self._finish((x,), {})
        return self.reverse(x, grad_out, *args, **kwargs)


class LazyLinear(LazyModuleMixin, Linear):
    """PyTorch's ``nn.LazyLinear(out_features, bias=True, device=None, dtype=None)``:
    ``in_features`` is the first input's last axis; becomes :class:`~fastnn.nn.Linear`."""

    cls_to_become = Linear
    _lazy_dim = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        self._lazy_setup({"out_features": out_features, "bias": bias}, dtype, device)

    def _infer(self, x) -> int:
        if x.ndim == 0:
            raise ValueError(f"{type(self).__name__}: expected input (..., in_features), got "
                             "a 0-d tensor")
        return x.shape[-1]


class _LazyChannels(LazyModuleMixin):
    """Lazy convolutions and norms: the input's channel axis decides the size."""

    _RANK = 1  # spatial axes
    _BATCH_AXIS = True  # False: the channels are axis 1 of any input (BatchNorm's)

    def _infer(self, x) -> int:
        rank = self._RANK
        if not self._BATCH_AXIS:
            if x.ndim < 2:
                raise ValueError(f"{type(self).__name__}: expected input (N, C, ...), got "
                                 f"{x.shape}")
            return x.shape[1]
        if x.ndim not in (rank + 1, rank + 2):
            raise RuntimeError(f"Expected {rank + 1}D (unbatched) or {rank + 2}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{x.shape}")
        return x.shape[1] if x.ndim == rank + 2 else x.shape[0]


class _LazyConv(_LazyChannels):
    _lazy_dim = "in_channels"

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None):
        self._lazy_setup({"out_channels": out_channels, "kernel_size": kernel_size,
                          "stride": stride, "padding": padding, "dilation": dilation,
                          "groups": groups, "bias": bias, "padding_mode": padding_mode},
                         dtype, device)


class LazyConv1d(_LazyConv, Conv1d):
    """PyTorch's ``nn.LazyConv1d(out_channels, kernel_size, ...)``; becomes Conv1d."""

    cls_to_become, _RANK = Conv1d, 1


class LazyConv2d(_LazyConv, Conv2d):
    """PyTorch's ``nn.LazyConv2d(out_channels, kernel_size, ...)``; becomes Conv2d."""

    cls_to_become, _RANK = Conv2d, 2


class LazyConv3d(_LazyConv, Conv3d):
    """PyTorch's ``nn.LazyConv3d(out_channels, kernel_size, ...)``; becomes Conv3d."""

    cls_to_become, _RANK = Conv3d, 3


class _LazyConvTranspose(_LazyChannels):
    _lazy_dim = "in_channels"

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None):
        self._lazy_setup({"out_channels": out_channels, "kernel_size": kernel_size,
                          "stride": stride, "padding": padding,
                          "output_padding": output_padding, "groups": groups, "bias": bias,
                          "dilation": dilation, "padding_mode": padding_mode}, dtype, device)


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """PyTorch's ``nn.LazyConvTranspose1d(out_channels, kernel_size, ...)``; becomes
    ConvTranspose1d."""

    cls_to_become, _RANK = ConvTranspose1d, 1


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """PyTorch's ``nn.LazyConvTranspose2d(out_channels, kernel_size, ...)``; becomes
    ConvTranspose2d."""

    cls_to_become, _RANK = ConvTranspose2d, 2


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """PyTorch's ``nn.LazyConvTranspose3d(out_channels, kernel_size, ...)``; becomes
    ConvTranspose3d."""

    cls_to_become, _RANK = ConvTranspose3d, 3


class _LazyNorm(_LazyChannels):
    _lazy_dim = "num_features"

    def __init__(self, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True):
        self._lazy_setup({"eps": eps, "momentum": momentum, "affine": affine,
                          "track_running_stats": track_running_stats, "bias": bias}, dtype,
                         device)

    def reset_running_stats(self) -> None:
        """Nothing while the buffers are placeholders, the norm's reset after."""
        if not self.has_uninitialized_params():
            super().reset_running_stats()


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """PyTorch's ``nn.LazyBatchNorm1d(eps, momentum, affine, track_running_stats)``;
    becomes BatchNorm1d."""

    cls_to_become, _BATCH_AXIS = BatchNorm1d, False


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """PyTorch's ``nn.LazyBatchNorm2d``; becomes BatchNorm2d."""

    cls_to_become, _BATCH_AXIS = BatchNorm2d, False


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """PyTorch's ``nn.LazyBatchNorm3d``; becomes BatchNorm3d."""

    cls_to_become, _BATCH_AXIS = BatchNorm3d, False


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """PyTorch's ``nn.LazyInstanceNorm1d(eps, momentum, affine=True,
    track_running_stats=True)`` (PyTorch's lazy defaults); over (N, C, L) or (C, L);
    becomes InstanceNorm1d."""

    cls_to_become, _RANK = InstanceNorm1d, 1


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """PyTorch's ``nn.LazyInstanceNorm2d``; becomes InstanceNorm2d."""

    cls_to_become, _RANK = InstanceNorm2d, 2


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """PyTorch's ``nn.LazyInstanceNorm3d``; becomes InstanceNorm3d."""

    cls_to_become, _RANK = InstanceNorm3d, 3
