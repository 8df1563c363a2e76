"""Containers: Sequential and Residual.

``Sequential.reverse(x, grad_out)`` first runs one forward pass *without the
tape* to get every layer's input (kept only for the duration of the call:
memory is one activation per layer, as with the tape), then chains the
layers' ``reverse`` from the last layer to the first. Nothing survives the
call, so it works on a fresh instance.

To avoid that second forward pass when the caller needs the output anyway
(to compute the loss gradient), ``forward_with_inputs(x)`` returns the output
and the list of layer inputs, which ``reverse(x, grad_out, inputs=...)`` then
uses instead of recomputing them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.activation import Activation
from fastnn.nn.hooks import has_hooks
from fastnn.nn.linear import Linear
from fastnn.nn.module import Module, check_input_dtype, check_tensor, keep_buffers


def _checked(what: str, module):
    if not isinstance(module, Module):
        raise TypeError(f"Sequential.{what}: expected a fastnn Module, got "
                        f"{type(module).__name__}")
    return module


class Sequential(Module):
    """Layers applied in order, as PyTorch's: ``Sequential(*layers)`` names them ``"0"``,
    ``"1"``, ... (parameters ``"0.weight"``), ``Sequential(OrderedDict([("conv", ...),
    ...]))`` by the dict's keys.

    The forward pass fuses a Linear followed by an activation layer (Activation, ReLU,
    GELU, ...: :meth:`Activation.fused_kind`) into one ``bias_act`` hook (matmul, then
    bias + activation in one kernel), unless either has hooks (which must see each
    call).
    """

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], Mapping):
            items = list(layers[0].items())
        else:
            items = [(str(i), layer) for i, layer in enumerate(layers)]
        for key, layer in items:
            if not isinstance(layer, Module):
                raise TypeError(
                    f"Sequential: entry {key!r} is a {type(layer).__name__}, not a fastnn Module"
                )
            if not isinstance(key, str) or not key or "." in key:
                raise KeyError(f"Sequential: names must be non-empty strings without '.', got "
                               f"{key!r}")
            setattr(self, key, layer)

    @property
    def layers(self) -> list:
        return list(self._modules.values())

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, index):
        if isinstance(index, slice):  # as PyTorch: a Sequential of the slice, names kept
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return self.layers[index]

    def __iter__(self):
        return iter(self.layers)

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end (named by its position); returns self."""
        setattr(self, str(len(self)), _checked("append", module))
        return self

    def extend(self, layers) -> Sequential:
        """Append each of ``layers`` (a Sequential or any iterable of modules)."""
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` at position ``index`` (negative from the end), the layers after
        it moving up one, all named by position, as PyTorch's."""
        n = len(self)
        if not isinstance(index, int) or not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index!r} out of range for {n} layers")
        layers = self.layers
        layers.insert(index + n if index < 0 else index, _checked("insert", module))
        self._renumber(layers)
        return self

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[index]  # (an IndexError names a bad index, as a list's)
        setattr(self, key, _checked("__setitem__", module))

    def __delitem__(self, index) -> None:
        """Remove the layer (or slice of layers) at ``index``; the rest are named by their
        new positions, as PyTorch's."""
        layers = self.layers
        del layers[index]
        self._renumber(layers)

    def pop(self, index: int = -1) -> Module:
        """Remove and return the layer at ``index``."""
        layer = self[index]
        del self[index]
        return layer

    def __add__(self, other) -> Sequential:
        """A new Sequential of this one's layers, then ``other``'s (the same modules)."""
        if not isinstance(other, Sequential):
            return NotImplemented
        return Sequential(*self.layers, *other.layers)

    def __iadd__(self, other) -> Sequential:
        if not isinstance(other, Sequential):
            return NotImplemented
        return self.extend(other.layers)

    def __mul__(self, times) -> Sequential:
        """A new Sequential holding the layers ``times`` times over (the same modules, so
        the repeats share parameters, as PyTorch's)."""
        if not _repeat_count(times):
            return NotImplemented
        return Sequential(*(self.layers * times))

    __rmul__ = __mul__

    def __imul__(self, times) -> Sequential:
        if not _repeat_count(times):
            return NotImplemented
        return self.extend(self.layers * (times - 1))

    def _renumber(self, layers: list) -> None:
        for key in list(self._modules):
            delattr(self, key)
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def forward(self, x):
        layers = self.layers
        i = 0
        while i < len(layers):
            layer = layers[i]
            nxt = layers[i + 1] if i + 1 < len(layers) else None
            fused = (nxt.fused_kind() if type(layer) is Linear and isinstance(nxt, Activation)
                     and not has_hooks(layer) and not has_hooks(nxt) else None)
            if fused is not None:
                if layer._parameters:
                    check_input_dtype(layer, x)
                x = layer.forward_act(x, *fused)
                i += 2
            else:
                x = layer(x)
                i += 1
        return x

    def forward_with_inputs(self, x):
        """(output, [input of each layer]) from one forward pass without the tape."""
        check_tensor("Sequential", x)
        inputs = []
        with no_grad():
            for layer in self.layers:
                inputs.append(x)
                x = layer(x)
        return x, inputs

    def reverse(self, x, grad_out, inputs=None):
        check_tensor("Sequential", x)
        layers = self.layers
        if inputs is None:
            inputs = []
            with no_grad(), keep_buffers():
                for layer in layers[:-1]:
                    inputs.append(x)
                    x = layer(x)
            inputs.append(x)
        elif (not isinstance(inputs, (list, tuple)) or len(inputs) != len(layers)
              or inputs[0] is not x):
            given = (f"{len(inputs)} entries" if isinstance(inputs, (list, tuple))
                     else type(inputs).__name__)
            raise ValueError(
                f"Sequential.reverse: inputs= must be the list from forward_with_inputs(x) "
                f"({len(layers)} entries, the first being x), got {given}"
            )
        inputs = list(inputs)
        names = list(self._modules)
        grads = {}
        grad = grad_out
        for index in range(len(layers) - 1, -1, -1):
            grad, own = layers[index].reverse(inputs[index], grad)
            inputs[index] = None  # free each input as soon as its layer is done
            for name, g in own.items():
                grads[f"{names[index]}.{name}"] = g
        return grad, grads


class Residual(Module):
    """y = x + inner(x); parameters are the inner module's, named ``"inner.<name>"``."""

    def __init__(self, inner: Module):
        super().__init__()
        if not isinstance(inner, Module):
            raise TypeError(f"Residual: inner must be a fastnn Module, got {type(inner).__name__}")
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        if y.shape != x.shape:
            raise ValueError(
                f"Residual: the inner module maps {x.shape} to {y.shape}; a residual needs the "
                "same shape in and out"
            )
        return x + y

    def reverse(self, x, grad_out):
        grad_inner, own = self.inner.reverse(x, grad_out)
        with no_grad():
            grad_x = grad_out + grad_inner
        return grad_x, {f"inner.{name}": g for name, g in own.items()}


def _repeat_count(times) -> bool:
    """Whether ``times`` is an int Sequential can be multiplied by (a ValueError when it is
    an int below 1, as PyTorch's)."""
    if isinstance(times, bool) or not isinstance(times, int):
        return False
    if times <= 0:
        raise ValueError(f"Sequential: can only multiply by a positive int, got {times}")
    return True
