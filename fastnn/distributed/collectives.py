"""PyTorch's tensor collectives: ``all_reduce``, ``broadcast``, ``all_gather`` ... in place.

Each writes its result into the tensors it is given, as ``torch.distributed`` does:
through :func:`fastnn.ops.storage.write`, so every view of a written tensor sees the
values and its version moves on (a backward through a value it overwrote is refused),
without history (a collective is not differentiable). They run on the
:class:`~fastnn.distributed.comm.Communicator`'s backend hooks, ``allreduce`` and
``broadcast``, one hook call each: a gather is an all-reduce (sum) of a buffer in which
every rank fills its own slot with its tensor and leaves zeros elsewhere (so a -0.0 comes
back as 0.0); ``ReduceOp.PRODUCT`` multiplies such a gathered buffer on each rank.

Before each collective the ranks all-gather (shape, dtype) in one small host message, so
that ranks that disagree all raise the same DistributedError instead of mixing up values
or hanging.
"""

from __future__ import annotations

from fastnn.autograd.grad_mode import no_grad
from fastnn.distributed.comm import Communicator, check_same_layout
from fastnn.distributed.process_group import ReduceOp, Work, world
from fastnn.ops.joining import stack
from fastnn.ops.storage import write
from fastnn.ops.tensor import Tensor, zeros
from fastnn.ops.view_layout import overlaps


def _tensor(where: str, t, name: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{where}: {name} must be a fastnn Tensor, got {type(t).__name__}")
    if t._view is not None and overlaps(t):
        raise RuntimeError(f"{where}: {name} is an expand()ed view whose elements share "
                           "memory; call .clone() before writing into it")
    return t


def _like(where: str, t: Tensor, other, name: str, shape=None) -> Tensor:
    """``other`` checked to be a tensor of ``t``'s dtype and device (and ``shape``)."""
    _tensor(where, other, name)
    if other.dtype is not t.dtype or other.device != t.device:
        raise TypeError(f"{where}: {name} is {other.dtype.name} on {other.device}, but the "
                        f"input tensor is {t.dtype.name} on {t.device}; they must match")
    want = t.shape if shape is None else shape
    if other.numel() != _numel(want):
        raise ValueError(f"{where}: {name} has shape {other.shape}, expected {want} (or "
                         f"another shape of {_numel(want)} elements)")
    return other


def _numel(shape) -> int:
    count = 1
    for n in shape:
        count *= n
    return count


def _rank(comm: Communicator, where: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < comm.size:
        raise ValueError(f"{where}: {name} must be a rank in [0, {comm.size}), got {value!r}")
    return value


def _op(where: str, op, t: Tensor) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{where}: op must be a dist.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), "
                        f"got {op!r}")
    if op is ReduceOp.AVG and not t.dtype.is_floating:
        raise TypeError(f"{where}: ReduceOp.AVG needs a floating tensor, got {t.dtype.name}; "
                        "use ReduceOp.SUM and divide")
    return op


def _agree(comm: Communicator, where: str, *tensors) -> None:
    layout = [(f"tensor {i}", tuple(t.shape), t.dtype.name) for i, t in enumerate(tensors)]
    check_same_layout(comm, where, layout, what="tensors")


def _set(t: Tensor, values: Tensor) -> None:
    """``values`` (any shape of t's numel, t's dtype and device) written into ``t``."""
    with no_grad():
        write(t, values.reshape(t.shape))


def _wire(t: Tensor) -> Tensor:
    """``t`` as the collectives carry it: bool as int32 (MPI has no sum of bools)."""
    return t.to("int32") if t.dtype.name == "bool" else t


def _reduced(comm: Communicator, t: Tensor, op: ReduceOp) -> Tensor:
    """The ranks' ``t`` combined by ``op``: a new tensor of t's dtype."""
    wire = _wire(t)
    if op is ReduceOp.PRODUCT:
        out = _gathered(comm, wire).prod(0)
    else:
        out = comm.allreduce(wire, op.value)
    return out.to(t.dtype)


def _gathered(comm: Communicator, t: Tensor) -> Tensor:
    """Every rank's ``t`` stacked in rank order, shape (size, *t.shape): one all-reduce."""
    wire = _wire(t)
    with no_grad():
        slots = zeros((comm.size,) + tuple(t.shape), dtype=wire.dtype, device=t.device)
        slots[comm.rank] = wire.detach()
    (data,) = comm.allreduce_arrays(t._device, wire._dtype, [slots._data], "sum")
    out = Tensor._make(data, wire._dtype, t._device)
    return out.to(t.dtype) if wire is not t else out


def _done(async_op: bool):
    return Work() if async_op else None


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """``tensor`` on every rank replaced, in place, by the ranks' tensors combined by
    ``op`` (``ReduceOp.SUM`` by default; AVG needs a floating tensor)."""
    comm = world(group, "all_reduce")
    _op("all_reduce", op, _tensor("all_reduce", tensor))
    _agree(comm, "all_reduce", tensor)
    _set(tensor, _reduced(comm, tensor, op))
    return _done(async_op)


def reduce(tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """``all_reduce``, written on rank ``dst`` only (the other ranks' tensor is unchanged)."""
    comm = world(group, "reduce")
    _op("reduce", op, _tensor("reduce", tensor))
    _rank(comm, "reduce", "dst", dst)
    _agree(comm, "reduce", tensor)
    result = _reduced(comm, tensor, op)
    if comm.rank == dst:
        _set(tensor, result)
    return _done(async_op)


def broadcast(tensor, src: int, group=None, async_op: bool = False):
    """Rank ``src``'s values of ``tensor`` written into ``tensor`` on every rank."""
    comm = world(group, "broadcast")
    _tensor("broadcast", tensor)
    _rank(comm, "broadcast", "src", src)
    _agree(comm, "broadcast", tensor)
    (data,) = comm.broadcast_arrays(tensor._device, tensor._dtype, [tensor._data], src)
    _set(tensor, Tensor._make(data, tensor._dtype, tensor._device))
    return _done(async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Every rank's ``tensor`` written into ``tensor_list[r]`` (r: the rank), on every rank;
    the list holds one tensor per rank, each of ``tensor``'s shape, dtype and device."""
    comm = world(group, "all_gather")
    _tensor("all_gather", tensor)
    _outputs(comm, "all_gather", "tensor_list", tensor_list, tensor)
    _agree(comm, "all_gather", tensor)
    for out, values in zip(tensor_list, _gathered(comm, tensor)):
        _set(out, values)
    return _done(async_op)


def _outputs(comm, where: str, name: str, tensors, t: Tensor) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != comm.size:
        got = f"{len(tensors)} entries" if isinstance(tensors, (list, tuple)) else \
            type(tensors).__name__
        raise ValueError(f"{where}: {name} must be a list of {comm.size} tensors (one per "
                         f"rank), got {got}")
    for i, out in enumerate(tensors):
        _like(where, t, out, f"{name}[{i}]")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` written into ``output_tensor``, in rank order: of shape
    (size * n, ...) (concatenated) or (size, n, ...) (stacked)."""
    comm = world(group, "all_gather_into_tensor")
    _tensor("all_gather_into_tensor", input_tensor, "input_tensor")
    stacked = (comm.size,) + tuple(input_tensor.shape)
    _like("all_gather_into_tensor", input_tensor, output_tensor, "output_tensor", stacked)
    _tensor("all_gather_into_tensor", output_tensor, "output_tensor")
    _agree(comm, "all_gather_into_tensor", input_tensor)
    _set(output_tensor, _gathered(comm, input_tensor))
    return _done(async_op)


def gather(tensor, gather_list=None, dst: int = 0, group=None, async_op: bool = False):
    """Every rank's ``tensor`` written into ``gather_list`` (one tensor per rank) on rank
    ``dst``; the other ranks pass no list."""
    comm = world(group, "gather")
    _tensor("gather", tensor)
    _rank(comm, "gather", "dst", dst)
    if comm.rank == dst:
        _outputs(comm, "gather", "gather_list", gather_list, tensor)
    elif gather_list:
        raise ValueError("gather: gather_list must be given on rank dst only")
    _agree(comm, "gather", tensor)
    gathered = _gathered(comm, tensor)
    if comm.rank == dst:
        for out, values in zip(gather_list, gathered):
            _set(out, values)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src: int = 0, group=None, async_op: bool = False):
    """``scatter_list[r]`` of rank ``src`` written into ``tensor`` on rank r; the other
    ranks pass no list (one broadcast of the stacked list)."""
    comm = world(group, "scatter")
    _tensor("scatter", tensor)
    _rank(comm, "scatter", "src", src)
    if comm.rank == src:
        _outputs(comm, "scatter", "scatter_list", scatter_list, tensor)
    elif scatter_list:
        raise ValueError("scatter: scatter_list must be given on rank src only")
    _agree(comm, "scatter", tensor)
    shape = (comm.size,) + tuple(tensor.shape)
    with no_grad():
        if comm.rank == src:
            stacked = stack([t.detach().reshape(tensor.shape) for t in scatter_list])
        else:
            stacked = zeros(shape, dtype=tensor.dtype, device=tensor.device)
    (data,) = comm.broadcast_arrays(tensor._device, tensor._dtype, [stacked._data], src)
    _set(tensor, Tensor._make(data, tensor._dtype, tensor._device)[comm.rank])
    return _done(async_op)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Every rank's picklable ``obj`` written into ``object_list[r]``, on every rank."""
    comm = world(group, "all_gather_object")
    if not isinstance(object_list, list) or len(object_list) != comm.size:
        raise ValueError(f"all_gather_object: object_list must be a list of {comm.size} "
                         f"entries (one per rank), got {object_list!r}")
    object_list[:] = comm.allgather_object(obj)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None) -> None:
    """Rank ``src``'s entries of ``object_list`` (picklable) written into it on every rank."""
    comm = world(group, "broadcast_object_list")
    _rank(comm, "broadcast_object_list", "src", src)
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, got "
                        f"{type(object_list).__name__}")
    object_list[:] = comm.bcast_object(list(object_list), root=src)
