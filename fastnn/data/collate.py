"""How a DataLoader turns a list of samples into a batch, as PyTorch's ``default_collate``.

Two steps, so that worker processes never hold device memory: :func:`stack_host` stacks
the samples into NumPy arrays (what a worker does and sends back), and :func:`to_device`
turns those arrays into tensors on the loader's device (what the main process does).
:func:`default_collate` is the two together.

Samples may be arrays, fastnn or PyTorch tensors, numbers, strings, and tuples, lists,
named tuples and dicts of those. Numbers become int64, float64 or bool tensors as in
PyTorch (Python ints with a float among them: the default float dtype, as
``torch.tensor(batch)``); strings stay as they came (a list at the top, a tuple as a
field of tuple samples). A tuple or list sample gives a list of batches, as PyTorch's
(a named tuple its own type).
"""

from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from fastnn.api.dtypes import get_default_dtype
from fastnn.ops.tensor import Tensor, tensor


class Stacked(np.ndarray):
    """A NumPy array that :func:`stack_host` made (to become a tensor in :func:`to_device`);
    arrays the user returns from ``collate_fn`` are left as they are."""


def stack_host(samples: list, indices=None, where=""):
    """``samples`` stacked field by field into NumPy arrays (in a worker: no device)."""
    first = samples[0]
    if _python_int(first) and any(type(s) is float for s in samples):
        # NOTE: PyTorch collates Python ints with torch.tensor(batch), which gives a float
        # among them the default float dtype (float32), not NumPy's float64
        return np.asarray(samples, dtype=get_default_dtype().numpy).view(Stacked)
    if isinstance(first, (Tensor, np.ndarray, np.generic, numbers.Number)) or _is_torch(first):
        rows = [_host(v) for v in samples]
        odd = next((k for k, row in enumerate(rows) if row.shape != rows[0].shape), None)
        if odd is not None:  # as PyTorch's collate: which samples, which shapes
            first_i, odd_i = (0, odd) if indices is None else (int(indices[0]), int(indices[odd]))
            raise RuntimeError(
                f"DataLoader: the samples of a batch must have one shape to be stacked, but "
                f"sample {first_i} has shape {rows[0].shape} and sample {odd_i} has "
                f"{rows[odd].shape}{where}; pad them to one shape or use batch_size=1")
        return np.stack(rows).view(Stacked)
    if isinstance(first, (str, bytes)):  # as PyTorch's: the samples as they came (a
        return samples                    # field of tuple samples stays a tuple)
    if isinstance(first, collections.abc.Mapping):
        fields = {key: stack_host([s[key] for s in samples], indices,
                                  f" (field {key!r} of each sample)") for key in first}
        return fields if type(first) is dict else type(first)(fields)
    if isinstance(first, collections.abc.Sequence):
        lengths = {len(s) for s in samples}
        if len(lengths) != 1:
            raise RuntimeError(f"DataLoader: each sample of a batch must have the same number "
                               f"of fields, got {sorted(lengths)}")
        fields = [stack_host(column, indices, f" (field {k} of each sample)")
                  for k, column in enumerate(zip(*samples))]
        if isinstance(first, tuple) and hasattr(first, "_fields"):  # a named tuple
            return type(first)(*fields)
        return fields  # (a tuple's too, as PyTorch's: batch[0] = ... may be assigned)
    raise TypeError(f"DataLoader: default_collate cannot batch samples of type "
                    f"{type(first).__name__}; return arrays, tensors, numbers, strings, or "
                    f"tuples, lists or dicts of them, or pass collate_fn=")


def to_device(batch, device):
    """What :func:`stack_host` made, with its arrays as tensors on ``device``."""
    if isinstance(batch, Stacked):
        return tensor(batch.view(np.ndarray), device=device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def default_collate(batch: list, device=None):
    """``batch`` (a list of samples) as one batch of tensors on ``device`` (default: the
    current one), the sample's structure kept."""
    from fastnn.api.device import as_device, get_device

    if not isinstance(batch, (list, tuple)) or not batch:
        raise TypeError(f"default_collate: expected a non-empty list of samples, got {batch!r}")
    if all(isinstance(s, Tensor) for s in batch):  # already on a device: stay there
        from fastnn.ops.joining import stack

        return stack(list(batch))
    return to_device(stack_host(list(batch)), get_device() if device is None
                     else as_device(device))


def default_convert(sample, device=None):
    """One sample's arrays (and numbers inside containers) as tensors, unbatched: what a
    loader with ``batch_size=None`` yields."""
    from fastnn.api.device import as_device, get_device

    device = get_device() if device is None else as_device(device)
    if isinstance(sample, (np.ndarray, np.generic)) and sample.dtype.kind not in "OSU" or (
            _is_torch(sample)):
        return tensor(_host(sample), device=device)
    if isinstance(sample, dict):
        return {k: default_convert(v, device) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(default_convert(v, device) for v in sample))
    if isinstance(sample, (tuple, list)):  # a tuple gives a list, as PyTorch's
        return [default_convert(v, device) for v in sample]
    return sample


def _host(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.numpy()
    if _is_torch(value):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _python_int(value) -> bool:
    """A Python int or bool (not a NumPy integer, which PyTorch collates by its own dtype)."""
    return isinstance(value, int) and not isinstance(value, np.generic)


def _is_torch(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")
