"""PyTorch's ``torch.nn.utils.parametrize``: a tensor of a module computed from others.

``register_parametrization(module, "weight", P)`` moves the module's ``weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ...
when ``P.right_inverse`` returns several tensors) and makes ``module.weight`` a
property that returns ``P(original)`` on every read. The module's class becomes a
subclass ``Parametrized<Class>`` that holds the properties; state_dict keys are
PyTorch's (``parametrizations.weight.original``). Assigning ``module.weight = t``
stores ``right_inverse(t)`` in the originals. Inside :func:`cached`, each
parametrized tensor is computed once.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.lists import ModuleDict, ModuleList
from fastnn.nn.module import Module, tape_reverse
from fastnn.nn.parameter import Parameter
from fastnn.ops.tensor import Tensor

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (one value for all reads)."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _set_in_place(original: Tensor, value: Tensor) -> None:
    """``original`` takes ``value``'s values and shape and keeps its identity (PyTorch's
    ``set_``), so an optimizer holding it keeps working."""
    with no_grad():
        if original.shape == value.shape:
            original.copy_(value)
        else:
            original.data = value.detach().clone()


def _register(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _check_same(what: str, value, dtype, shape) -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the "
                         f"tensor, unless the `unsafe` flag is enabled.\n{what} dtype: {dtype}"
                         f"\nparametrized dtype: {value.dtype}")
    if value.shape != shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the "
                         f"tensor, unless the `unsafe` flag is enabled.\n{what} shape: {shape}"
                         f"\nparametrized shape: {value.shape}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or to
    ``original0, original1, ...``), which this list owns."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False):
        modules = list(modules)
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        dtype, shape = original.dtype, original.shape
        with no_grad():
            new = original
            for module in reversed(modules):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # as PyTorch: then right_inverse is taken as the identity
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if new is not original:
                _set_in_place(original, new)
            _register(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of type "
                                     f"{type(part).__name__}")
                part = part.detach().clone()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.param_class)
                part.requires_grad_(original.requires_grad)
                _register(self, f"original{i}", part)
        if not self.unsafe:
            _check_same("unparametrized", self(), dtype, shape)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` (what the parametrized tensor should be) in the originals."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor) or value.dtype != self.original.dtype:
                    raise ValueError("`right_inverse` should return a tensor of the original's "
                                     f"dtype {self.original.dtype}; got {value!r}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} "
                                 f"tensors. Got {type(value).__name__}")
            for i, part in enumerate(value):
                _set_in_place(getattr(self, f"original{i}"), part)


def _parametrized_getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See: https://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _parametrized_deepcopy(self, memo):
    replica = memo.get(id(self))
    if replica is None:
        replica = self.__new__(type(self))
        memo[id(self)] = replica
        for key, value in self.__dict__.items():
            object.__setattr__(replica, key, copy.deepcopy(value, memo))
    return replica


def _parametrized_setattr(self, name, value):
    if is_parametrized(self, name):
        object.__setattr__(self, name, value)  # the property's setter: right_inverse
    else:
        type(self).__bases__[0].__setattr__(self, name, value)


def _parametrized_reverse(self, x, grad_out):
    # a layer's hand-written reverse reads self.weight and names its gradient "weight";
    # the tape gives the gradients of the originals, which are the parameters now
    return tape_reverse(self, self.forward, x, grad_out)


def _inject_new_class(module: Module) -> None:
    cls = type(module)
    namespace = {"__getstate__": _parametrized_getstate, "__setattr__": _parametrized_setattr,
                 "__deepcopy__": _parametrized_deepcopy, "reverse": _parametrized_reverse}
    object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,),
                                                 namespace))


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (see the module's
    docstring); a second call on the same name chains another parametrization after it.
    Unless ``unsafe``, the parametrized tensor must keep the original's shape and dtype."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: parametrization must be a fastnn.nn."
                        f"Module, got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            new = parametrization(current)
            _check_same(f"module.{tensor_name}", new, current.dtype, current.shape)
            if hasattr(parametrization, "right_inverse"):
                try:
                    back = parametrization.right_inverse(new)
                except NotImplementedError:
                    pass
                else:
                    _check_same("right_inverse", back, current.dtype, current.shape)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        chain = ParametrizationList([parametrization], getattr(module, tensor_name),
                                    unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = module.__dict__.get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding its parametrized value (``leave_parametrized``)
    or the original. A single original keeps its identity (an optimizer still holds it)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_in_place(original, value)
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        kind = getattr(chain.original0, "param_class", "other")
        original = Parameter(value.detach(), kind) if value.requires_grad else value.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                         "that is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        object.__setattr__(module, "__class__", type(module).__bases__[0])
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations changed it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give ``to_module`` the parametrizations of ``from_module`` (all of them, or those of
    ``tensor_name``), sharing the same parametrization modules and original parameters,
    as PyTorch's; a tensor ``to_module`` lacks is first added as a Parameter holding
    ``from_module``'s parametrized value. Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            num = 0
            while hasattr(source, f"original{num}"):
                setattr(target, f"original{num}", getattr(source, f"original{num}"))
                num += 1
    return to_module
