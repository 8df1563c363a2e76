"""SyncBatchNorm: PyTorch's batch normalisation over the batches of all ranks.

In training, with a process group of more than one rank
(``fastnn.distributed.init_process_group``), each rank computes its batch's per-channel
count, mean and sum of squared deviations; one all-reduce gathers them from every rank
and they are combined (Chan's parallel formula, stable where E[x^2] - E[x]^2 is not) into
the mean and biased variance of the concatenated global batch, which normalise, and whose
unbiased variance updates the running statistics, as ``torch.nn.SyncBatchNorm`` does.

The all-reduce takes part in autograd (:class:`_AllReduceSum`): its backward is an
all-reduce (sum) of the gradient, so the terms of the input's gradient that go through the
batch statistics (torch's ``sum_dy`` and ``sum_dy_xmu``) are summed over the ranks, while
``weight.grad`` and ``bias.grad`` stay each rank's own share, which DDP then averages:
torch's backward. Every rank must run the backward, as in torch.

In eval mode, and without an initialised process group or with one rank, it is
BatchNorm (torch falls back to ``F.batch_norm`` there too). It accepts any input
(N, C, ...) of at least 2 dimensions.
"""

from __future__ import annotations

from fastnn.api.args import real
from fastnn.autograd.function import Function
from fastnn.autograd.grad_mode import no_grad
from fastnn.nn.batchnorm import _BatchNorm
from fastnn.nn.module import check_tensor
from fastnn.ops.joining import cat, stack
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import zeros

__all__ = ["SyncBatchNorm"]


def _no_world(process_group):
    return None


# fastnn.distributed sits above fastnn.nn: it installs its lookup here when imported
# (fastnn.distributed.process_group); before that no process group can exist
_find_world = _no_world


def register_world_lookup(lookup) -> None:
    """Install ``lookup(process_group) -> Communicator or None`` (None: no process group
    is initialised): how SyncBatchNorm finds the ranks to synchronise over."""
    global _find_world
    _find_world = lookup


class _AllReduceSum(Function):
    """The sum of ``t`` over the ranks of ``comm``, on every rank; differentiable: the
    gradient of each rank's ``t`` is the sum over the ranks of the result's gradients."""

    @staticmethod
    def forward(ctx, t, comm):
        ctx.comm = comm
        return comm.allreduce(t, "sum")

    @staticmethod
    def backward(ctx, grad):
        return ctx.comm.allreduce(grad.contiguous(), "sum"), None


class SyncBatchNorm(_BatchNorm):
    """PyTorch's SyncBatchNorm over (N, C, ...): BatchNorm whose training statistics are
    those of every rank's batch together (see the module docstring).

    ``process_group``: None or ``dist.group.WORLD`` (fastnn has one group, the world).
    """

    LAYOUT = "(N, C, ...)"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         dtype=dtype, device=device, bias=bias)
        self.process_group = process_group

    def _check_input(self, x) -> None:
        check_tensor("SyncBatchNorm", x)
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2D input (got {x.ndim}D "
                             f"input)")
        if x.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm({self.num_features}): expected input "
                             f"{self.LAYOUT} with {self.num_features} channels, got "
                             f"{x.shape}")

    def _communicator(self):
        """The communicator to synchronise over, or None where torch falls back to
        batch_norm: not training, no process group, or one rank."""
        comm = _find_world(self.process_group) if self.training else None
        return comm if comm is not None and comm.size > 1 else None

    def _batch_norm(self, x, running_mean, running_var, use_batch: bool, momentum: float):
        comm = self._communicator() if use_batch else None
        if comm is None:
            return super()._batch_norm(x, running_mean, running_var, use_batch, momentum)
        # float16/bfloat16 in float32, as torch: a count past 65504 is inf in float16
        work = x if x.dtype.itemsize >= 4 else x.to("float32")
        mean, var, count = _global_stats(work, comm)
        if running_mean is not None:
            _update(running_mean, running_var, mean, var, count, momentum)
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        out = (work - mean.reshape(shape)) * ((var + self.eps) ** -0.5).reshape(shape)
        if self.weight is not None:
            out = out * self.weight.to(work.dtype).reshape(shape)
        if self.bias is not None:
            out = out + self.bias.to(work.dtype).reshape(shape)
        return out if out.dtype is x.dtype else out.to(x.dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm1d/2d/3d in its tree replaced by a SyncBatchNorm
        holding the same parameters, buffers and training mode (a BatchNorm ``module``
        itself comes back as a new SyncBatchNorm), as torch's."""
        output = module
        if isinstance(module, _BatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats, process_group)
            if module.affine:
                output.weight, output.bias = module.weight, module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in list(module.named_children()):
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return output


def _global_stats(x, comm):
    """The per-channel mean and biased variance of every rank's ``x`` together, and the
    global count per channel: one differentiable all-reduce of each rank's (count, mean,
    sum of squared deviations) in its own slot."""
    channels = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    local = x.numel() // channels
    if local:
        mean = x.mean(axis=axes)
        centered = x - mean.reshape((1, channels) + (1,) * (x.ndim - 2))
        m2 = (centered * centered).sum(axis=axes)
    else:  # an empty shard takes part with count 0
        mean = m2 = x.sum(axis=axes)
    counts = zeros((channels,), dtype=x.dtype, device=x.device) + float(local)
    mine = stack([counts, mean, m2]).reshape(1, 3, channels)
    parts = []
    if comm.rank:
        parts.append(zeros((comm.rank, 3, channels), dtype=x.dtype, device=x.device))
    parts.append(mine)
    if comm.size - comm.rank - 1:
        parts.append(zeros((comm.size - comm.rank - 1, 3, channels), dtype=x.dtype,
                           device=x.device))
    gathered = _AllReduceSum.apply(cat(parts, 0) if len(parts) > 1 else mine, comm)
    ns, means, m2s = gathered[:, 0], gathered[:, 1], gathered[:, 2]
    total = ns.sum(0)  # a tensor: no value read back to Python (fnn.compile replays this)
    mean = (ns * means).sum(0) / total
    deviation = means - mean.reshape(1, channels)
    var = (m2s + ns * deviation * deviation).sum(0) / total
    return mean, var, total


def _update(running_mean, running_var, mean, var, count, momentum) -> None:
    """The running statistics' update with the global unbiased variance, in place and off
    the tape (``count``: the global count per channel, a tensor)."""
    momentum = real("SyncBatchNorm", "momentum", momentum)
    with no_grad():
        unbiased = var.detach() * (count / (count - 1.0))
        new_mean = running_mean * (1.0 - momentum) + mean.detach().to(running_mean.dtype) * \
            momentum
        new_var = running_var * (1.0 - momentum) + unbiased.to(running_var.dtype) * momentum
    rebind(running_mean, new_mean._data)
    rebind(running_var, new_var._data)
