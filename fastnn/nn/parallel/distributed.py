"""``DistributedDataParallel``: PyTorch's DDP wrapper over :mod:`fastnn.distributed`.

The same model on every rank; after ``loss.backward()`` every parameter's ``.grad`` is
the mean of the ranks' gradients, so that each rank's optimizer makes the same step::

    dist.init_process_group("nccl")
    model = DistributedDataParallel(model)    # rank 0's parameters and buffers everywhere
    loss_fn(model(x_shard), y_shard).backward()
    opt.step()                                # the plain optimizer: .grad is averaged

How: each trainable parameter gets a post-accumulate-grad hook
(:func:`fastnn.autograd.hooks.register_post_accumulate_grad_hook`). The first one a
backward pass runs queues a callback for the end of that pass
(:func:`fastnn.autograd.engine.queue_callback`), which averages every parameter's
``.grad`` in one collective per (device, dtype) with
:func:`~fastnn.distributed.data_parallel.average_gradients` (PyTorch's mean: a rank whose
pass did not reach a parameter contributes zeros; a parameter no rank reached keeps its
``.grad``). The reduction runs after the whole backward pass, not overlapped with it as
PyTorch's buckets are.

Whether a backward synchronises is decided by the forward before it, as PyTorch does:
a forward inside :meth:`DistributedDataParallel.no_sync` (or under ``no_grad``) arms no
synchronisation, and the gradients then accumulate locally until the backward of a
forward outside it averages the accumulated ``.grad``.
"""

from __future__ import annotations

import contextlib
import weakref

from fastnn.autograd import engine
from fastnn.autograd.grad_mode import is_grad_enabled
from fastnn.distributed.data_parallel import (
    average_gradients,
    broadcast_parameters,
    broadcast_tensors,
)
from fastnn.distributed.process_group import world
from fastnn.nn.module import Module
from fastnn.ops.storage import rebind


class DistributedDataParallel(Module):
    """``module`` replicated on every rank, its gradients averaged during ``backward``.

    ``device_ids``, ``output_device``, ``dim``, ``bucket_cap_mb``, ``check_reduction``,
    ``gradient_as_bucket_view`` and ``static_graph`` are accepted for PyTorch scripts and
    change nothing (the module stays on its device; the gradients travel in one buffer per
    device and dtype). ``find_unused_parameters`` is accepted: a parameter that a rank's
    pass did not reach is always handled (zeros from that rank), as PyTorch does with it.
    ``broadcast_buffers`` (default True): each forward that follows a synchronised one
    first copies rank 0's buffers (batch-norm statistics) to every rank. At construction
    rank 0's parameters and buffers are copied to every rank (unless ``init_sync=False``).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 init_sync: bool = True):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a fastnn nn.Module, got "
                            f"{type(module).__name__}")
        comm = world(process_group, "DistributedDataParallel")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.process_group = process_group
        self.require_backward_grad_sync = True  # False inside no_sync()
        self.require_forward_param_sync = True  # the last forward armed a synchronisation
        self._comm, self._params = comm, params
        self._armed = False  # the next backward averages the gradients
        self._queued = False  # this pass has queued the averaging
        if init_sync:  # PyTorch's init_sync=False skips it (the ranks already agree)
            broadcast_parameters(module, comm, 0)  # also checks that the ranks' models agree
        # the hooks hold the wrapper weakly: once it is gone they are removed, and backward
        # is back on its fast path
        reached = _weak_hook(weakref.ref(self))
        self._handles = [p.register_post_accumulate_grad_hook(reached) for p in params]
        weakref.finalize(self, _remove, self._handles)

    def forward(self, *args, **kwargs):
        """``module(*args, **kwargs)``, after rank 0's buffers were copied to every rank
        when ``broadcast_buffers`` and the previous forward armed a synchronisation."""
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = [b for b in self.module.buffers() if b is not None]
            if buffers and self._comm.size > 1:
                broadcast_tensors(self._comm, buffers, 0)
        out = self.module(*args, **kwargs)
        armed = is_grad_enabled() and self.require_backward_grad_sync
        self.require_forward_param_sync = self._armed = armed
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, forward passes arm no synchronisation: their backward passes add
        into ``.grad`` locally; the backward of the first forward after it averages the
        accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def _reached(self, param) -> None:
        """A parameter's ``.grad`` took this pass's gradient: average them all at the end."""
        if self._armed and not self._queued:
            self._queued = True
            engine.queue_callback(self._average)

    def _average(self) -> None:
        self._queued = False
        pairs = [(p, p._grad) for p in self._params]
        for p, averaged in average_gradients(self._comm, pairs, 1.0, over_ranks=True):
            if p._grad is None:
                p._grad = averaged
            else:
                rebind(p._grad, averaged._data)  # in place: views of .grad see the mean


def _remove(handles) -> None:
    for handle in handles:
        handle.remove()


def _weak_hook(ref):
    def reached(param) -> None:
        wrapper = ref()
        if wrapper is not None:
            wrapper._reached(param)

    return reached
