"""A module's state, as PyTorch's: buffers, ``state_dict()``, ``load_state_dict()``, and
moving it all between dtypes and devices (``to``, ``float``, ``double``, ``half``).

``state_dict()`` walks the tree as PyTorch does: each module's own parameters, then its
own persistent buffers, then each sub-module's state under ``"<name>."``; a parameter
shared by two modules appears under both names (tied weights), as in PyTorch. Values are
host NumPy copies. ``load_state_dict(state, strict=True)`` returns ``(missing_keys,
unexpected_keys)``; strict=True raises listing both, strict=False loads what matches.
A shape that differs raises in both modes, naming the key; nothing changes unless
everything that would be loaded converts.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping

import numpy as np

from fastnn.api import dtypes as fnn_dtypes
from fastnn.api.args import flag
from fastnn.api.errors import StateDictError
from fastnn.nn import state_hooks
from fastnn.nn.parameter import Parameter
from fastnn.nn.uninitialized import SHAPE_MESSAGE, is_uninitialized
from fastnn.ops.convert import host_array
from fastnn.ops.creation import as_tensor
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import Tensor
from fastnn.settings import check_memory_format


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the model's keys the state lacked, and the
    state's keys the model does not have (both lists, in order)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


def _misfit(name: str, strict: bool, missing, unexpected, mismatched) -> StateDictError:
    parts = []
    if strict and missing:
        parts.append(f"missing keys {missing}")
    if strict and unexpected:
        parts.append(f"unexpected keys {unexpected}")
    if mismatched:
        parts.append(f"shape mismatches [{'; '.join(mismatched)}]")
    hint = ("strict=False loads the keys that match" if not mismatched else
            "a shape must match, strict or not")
    return StateDictError(f"{name}.load_state_dict: the state dict does not fit this model: "
                          + ", ".join(parts) + f" (was it saved from another model? {hint})")


def _assign(root, state_dict) -> None:
    """PyTorch's ``load_state_dict(assign=True)``: each parameter and persistent buffer of
    ``root``'s modules that ``state_dict`` names becomes its value (a Parameter given stays
    itself; a Tensor is wrapped sharing its storage; an array becomes a tensor on the
    parameter's device, with its own dtype). Every value converts before any changes."""
    changes = []
    for path, module in root.named_modules(remove_duplicate=False):
        prefix = f"{path}." if path else ""
        for member, old in module._parameters.items():
            if old is not None and prefix + member in state_dict:
                value = state_dict[prefix + member]
                if isinstance(value, Parameter):
                    value.requires_grad_(old.requires_grad)
                else:
                    value = Parameter(_tensor_of(value, old), old.requires_grad,
                                      getattr(old, "param_class", "other"))
                changes.append((module, member, value))
        for member, old in module._buffers.items():
            if (old is not None and prefix + member in state_dict
                    and member not in module._non_persistent_buffers_set):
                changes.append((module, member, _tensor_of(state_dict[prefix + member], old)))
    for module, member, value in changes:
        setattr(module, member, value)


def _tensor_of(value, old: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return as_tensor(np.asarray(value), device=old.device)


class ModuleState:
    """The state half of :class:`~fastnn.nn.Module` (a mixin): buffers, state dicts,
    dtypes and devices."""

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Keep ``tensor`` (or None) as state that is saved and moved but not trained
        (BatchNorm's running statistics); ``persistent=False`` leaves it out of
        ``state_dict()``."""
        owner = f"{type(self).__name__}.register_buffer"
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{owner}: the name must be a non-empty string without '.', got "
                           f"{name!r}")
        if name in self._parameters or name in self._modules or (
                name in self.__dict__ and name not in self._buffers):
            raise KeyError(f"{owner}: {name!r} is already an attribute, parameter or "
                           f"sub-module of this module; choose another name")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"{owner}: buffer {name!r} must be a fastnn Tensor or None, got "
                            f"{type(tensor).__name__}")
        self._buffers[name] = None
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        setattr(self, name, tensor)

    def _state(self, prefix: str = "") -> dict:
        """name -> Tensor of every parameter and persistent buffer, in PyTorch's order
        (shared ones under every name)."""
        own = {}
        for name, p in self._parameters.items():
            if p is not None:
                own[prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                own[prefix + name] = b
        for name, mod in self._modules.items():
            if mod is not None:
                own.update(mod._state(f"{prefix}{name}."))
        return own

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """name -> a host NumPy copy of each parameter and persistent buffer (``keep_vars``:
        the tensors themselves), with PyTorch's ``destination`` (a dict filled and
        returned) and ``prefix`` (put before every name)."""
        out = {} if destination is None else destination
        for name, p in self._state(prefix).items():
            out[name] = p if keep_vars or is_uninitialized(p) else np.array(p.numpy(),
                                                                             copy=True)
        for name, module in self._extra_states(prefix).items():
            out[name] = module.get_extra_state()
        return out

    def get_extra_state(self):
        """PyTorch's hook for state that is neither a parameter nor a buffer: a module that
        overrides it (and :meth:`set_extra_state`) has what it returns saved in
        ``state_dict()`` under ``<prefix>_extra_state``, and given back on load."""
        raise RuntimeError(f"{type(self).__name__}.get_extra_state: not overridden, so the "
                           "module has no extra state (state_dict() calls it only where a "
                           "subclass defines it)")

    def set_extra_state(self, state) -> None:
        """Take back what :meth:`get_extra_state` returned (``load_state_dict`` calls it
        with the ``_extra_state`` entry)."""
        raise RuntimeError(f"{type(self).__name__}.set_extra_state: the state dict has extra "
                           "state for this module; define set_extra_state to load it")

    def _extra_states(self, prefix: str = "") -> dict:
        """``<prefix>_extra_state`` -> module, for each module of the tree whose class
        overrides :meth:`get_extra_state`."""
        found = {}
        if type(self).get_extra_state is not ModuleState.get_extra_state:
            found[prefix + "_extra_state"] = self
        for name, mod in self._modules.items():
            if mod is not None:
                found.update(mod._extra_states(f"{prefix}{name}."))
        return found

    def load_state_dict(self, state_dict, strict: bool = True,
                        assign: bool = False) -> IncompatibleKeys:
        """Copy ``state_dict`` (name -> array or Tensor) into the parameters and buffers,
        in place (the same objects, so an optimizer keeps them).

        Returns ``(missing_keys, unexpected_keys)``. ``strict=True`` (the default) raises a
        ValueError listing both when either is not empty; ``strict=False`` loads the keys
        that match. A value whose shape differs from the model's raises in both modes,
        naming the key. Nothing is loaded unless every value converts. ``assign=True``:
        PyTorch's, the state's tensors become the parameters and buffers (with their dtype;
        an array goes to the parameter's device), instead of being copied into them
        (a parameter keeps its requires_grad and class). Load hooks run as
        PyTorch's (:mod:`fastnn.nn.state_hooks`); with a post-hook, the keys that match load
        before ``strict`` judges what the hooks left missing or unexpected.
        """
        name = type(self).__name__
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"{name}.load_state_dict: state must be a dict of name -> array (as "
                f"model.state_dict() or fnn.load(path)['model'] give), got "
                f"{type(state_dict).__name__}"
            )
        strict = bool(strict)
        state_dict, missing, unexpected = state_hooks.run_pre_hooks(self, state_dict, strict)
        own, extras = self._state(), self._extra_states()
        missing += [n for n in (*own, *extras) if n not in state_dict]
        unexpected += [n for n in state_dict if n not in own and n not in extras]
        mismatched = []
        for key, p in own.items():
            if key in state_dict and is_uninitialized(state_dict[key]):
                if not is_uninitialized(p):  # PyTorch's error: nothing to load
                    raise RuntimeError(SHAPE_MESSAGE)
            elif key in state_dict and is_uninitialized(p):  # a lazy module takes the shape
                _shape_of_value(name, key, state_dict[key])
            elif key in state_dict:
                shape = _shape_of_value(name, key, state_dict[key])
                if shape != p.shape:
                    mismatched.append(f"{key}: checkpoint {shape}, model {p.shape}")
        # post-hooks may forgive missing or unexpected keys: then strict judges after them
        post_hooks = state_hooks.has_post_hooks(self)
        if mismatched or (strict and not post_hooks and (missing or unexpected)):
            raise _misfit(name, strict, missing, unexpected, mismatched)
        if flag(f"{name}.load_state_dict", "assign", assign):
            _assign(self, state_dict)
            return self._after_load(name, strict, missing, unexpected, post_hooks,
                                    (extras, state_dict))
        # convert every value before touching any tensor: a value that cannot be
        # converted leaves the model as it was
        converted = {}
        for key, p in own.items():
            if key not in state_dict or is_uninitialized(state_dict[key]):
                continue
            value = state_dict[key]
            try:
                host = value.numpy() if isinstance(value, Tensor) else value
                host = host_array("the value", host, p._dtype)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"{name}.load_state_dict: {key!r} cannot become {p._dtype.name}: {exc}; "
                    f"nothing was loaded"
                ) from None
            converted[key] = p._device.ops.from_numpy(host, p._device.index)
        for key, data in converted.items():
            p = own[key]
            if is_uninitialized(p):  # PyTorch's lazy load hook: materialised to that shape
                p._materialize_data(data)
                continue
            rebind(p, data)  # in place: views of the parameter see the loaded values (its
            # .grad stays, as PyTorch's copy_ under no_grad leaves it)
        return self._after_load(name, strict, missing, unexpected, post_hooks,
                                    (extras, state_dict))

    def _after_load(self, name, strict, missing, unexpected, post_hooks,
                    given) -> IncompatibleKeys:
        extras, state_dict = given  # the modules' extra states, then the post-hooks
        for key, module in extras.items():
            if key in state_dict:
                module.set_extra_state(state_dict[key])
        result = IncompatibleKeys(missing, unexpected)
        if post_hooks:
            state_hooks.run_post_hooks(self, result)
            if strict and (result.missing_keys or result.unexpected_keys):
                raise _misfit(name, strict, result.missing_keys, result.unexpected_keys, [])
        return result


    # ------------------------------------------------------------ devices and dtypes
    def to(self, *args, dtype=None, device=None, non_blocking=False,
           memory_format=None) -> ModuleState:
        """Move/convert every parameter and buffer in place, as PyTorch's: ``.to("cuda")``,
        ``.to(fnn.float64)``, ``.to("cuda", fnn.float64)``, ``.to(other_tensor)``.

        Parameters keep their identity (their data is swapped, so an optimizer made before
        still holds them), and their gradients follow. A dtype must be floating point;
        integer buffers (BatchNorm's num_batches_tracked) keep theirs. Everything is
        converted before anything is replaced, so a move that fails changes nothing.
        Returns self. PyTorch's ``non_blocking`` and ``memory_format`` are accepted
        (fastnn's copies are ordered, and its layouts stay row-major).
        """
        owner = f"{type(self).__name__}.to"
        check_memory_format(owner, memory_format)
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
        args = tuple(a for a in args if not isinstance(a, Tensor))
        moved = []
        for t in self._tensors():
            src = t._placeholder() if is_uninitialized(t) else t.detach()
            new = src.to(*args, dtype=dtype, device=device)
            if new._dtype is not t._dtype and not t._dtype.is_floating:
                new = src.to(new.device)  # integer buffers keep their dtype
            elif new._dtype is not t._dtype and not new._dtype.is_floating:
                raise TypeError(f"{owner}: parameters must stay floating point (a module "
                                f"converts to floating-point dtypes only), got "
                                f"{new._dtype.name}; nothing was converted")
            grad = t.grad if isinstance(t, Parameter) else None
            moved.append((t, new, None if grad is None else grad.to(new.device, new.dtype)))
        for t, new, grad in moved:
            t._data, t._dtype, t._device = new._data, new._dtype, new._device
            if isinstance(t, Parameter):
                t._grad = grad
        return self

    def _tensors(self) -> list:
        """Every parameter and buffer of the tree, each once."""
        return list(self.parameters()) + list(self.buffers())

    def float(self) -> ModuleState:
        """Floating-point parameters and buffers to float32; returns self."""
        return self.to(fnn_dtypes.float32)

    def double(self) -> ModuleState:
        """Floating-point parameters and buffers to float64; returns self."""
        return self.to(fnn_dtypes.float64)

    def half(self) -> ModuleState:
        """Floating-point parameters and buffers to float16 (where the device has it);
        returns self."""
        return self.to(fnn_dtypes.float16)

    def bfloat16(self) -> ModuleState:
        """Floating-point parameters and buffers to bfloat16 (where the device has it);
        returns self."""
        return self.to(fnn_dtypes.bfloat16)

    def type(self, dst_type) -> ModuleState:
        """Floating-point parameters and buffers to ``dst_type``; returns self."""
        return self.to(dst_type)

    def to_empty(self, *, device, recurse: bool = True) -> ModuleState:
        """Parameters and buffers moved to ``device`` without keeping their values (they
        are to be initialised or loaded next), as PyTorch's; returns self."""
        if not recurse:
            raise NotImplementedError("to_empty(recurse=False) is not supported: every "
                                      "parameter and buffer of the tree moves")
        return self.to(device)

    def share_memory(self) -> ModuleState:
        """Returns self, with a warning (once): fastnn does not share a module's tensors
        across processes (PyTorch moves them to shared memory for its multiprocessing;
        see ``Tensor.share_memory_``)."""
        from fastnn.ops.tensor_facts import warn_not_shared  # (nn sits above ops)

        warn_not_shared()
        return self

    def compile(self, *args, **kwargs) -> None:
        """``model.compile()``, PyTorch's in-place ``torch.compile``: accepted, and the
        module keeps running eagerly, which computes what a compiled forward computes.
        (fastnn's capture, ``fnn.compile(train_step)``, records a whole step.)"""

    def cpu(self) -> ModuleState:
        """Move to the cpu device; returns self."""
        return self.to("cpu")

    def cuda(self, device=None) -> ModuleState:
        """Move to a CUDA device (``None``: ``"cuda"``, an int ``n``: ``"cuda:n"``); returns
        self."""
        return self.to("cuda" if device is None else
                       f"cuda:{device}" if isinstance(device, int) else device)


def _shape_of_value(owner: str, name: str, value) -> tuple:
    """The shape of one state-dict value; TypeError/ValueError naming the key for a value
    that has none (None, ragged lists), which np.shape would call () or fail on."""
    if isinstance(value, Tensor):
        return value.shape
    if value is None:
        raise TypeError(f"{owner}.load_state_dict: {name!r} is None; give an array (a state "
                        "dict from model.state_dict() or fnn.load)")
    try:
        return tuple(np.shape(value))
    except ValueError:
        raise ValueError(f"{owner}.load_state_dict: {name!r} is a ragged nested list, not an "
                         "array; nothing was loaded") from None
