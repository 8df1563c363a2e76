"""Data parallelism: the same model on every rank, gradients averaged before each update.

``broadcast_parameters`` makes every rank start from root's weights;
``DistributedOptimizer`` wraps an optimizer so that ``step()`` (tape) and
``apply_gradients`` (what ``Module.apply`` calls on the reverse path) average
the gradients over the ranks first and then update as the wrapped optimizer
does. Every rank then holds the same weights after every step.

The average is weighted by each rank's sample count ``n_r`` (``samples=``):
``g = sum_r n_r g_r / sum_r n_r``, which is the full-batch mean gradient when
each ``g_r`` is its shard's mean, also when the shards differ in size. A step's
gradients travel in one collective per (device, dtype): the backend's
``allreduce`` hook packs them. The weights ride in the same buffer: one entry
per parameter, ``n_r`` where the rank has that gradient and 0 where it has none,
so a parameter no rank has a gradient for is skipped (as ``step()`` skips it
on one process), and a rank with an empty shard contributes nothing.
"""

from __future__ import annotations

import numpy as np

from fastnn.api.args import integer
from fastnn.api.dtypes import as_dtype
from fastnn.api.program import recording
from fastnn.distributed.comm import Communicator, check_same_layout
from fastnn.ops.storage import rebind
from fastnn.ops.tensor import Tensor, tensor
from fastnn.optim.optimizer import Optimizer

_WIDE = ("float32", "float64")  # dtypes that hold a sample count exactly (to 2**24)


def _grouped(items):
    """``items`` (key, ...) grouped by key, in first-seen order: {key: [item, ...]}."""
    groups: dict = {}
    for item in items:
        groups.setdefault(item[0], []).append(item)
    return groups


def broadcast_parameters(model, comm: Communicator, root: int = 0) -> None:
    """Overwrite every rank's parameters and buffers with rank ``root``'s, in place.

    One collective per (device, dtype). Raises DistributedError on every rank
    when the ranks' models differ in names, shapes or dtypes.
    """
    _check_comm("broadcast_parameters", comm)
    comm.check_root("broadcast_parameters", root)
    if not hasattr(model, "named_parameters"):
        raise TypeError(f"broadcast_parameters: expected a fastnn Module, got "
                        f"{type(model).__name__}")
    named = list(model.named_parameters())
    named += list(getattr(model, "named_buffers", lambda: ())())
    check_same_layout(comm, "broadcast_parameters",
                      [(name, tuple(t.shape), t.dtype.name) for name, t in named])
    broadcast_tensors(comm, [t for _, t in named], root)


def broadcast_tensors(comm: Communicator, tensors: list, root: int = 0) -> None:
    """Overwrite every rank's ``tensors`` with rank ``root``'s, in place and without
    history, in one collective per (device, dtype); the ranks' lists must agree."""
    groups = _grouped(((t._device, t._dtype.name), t) for t in tensors)
    for (device, dtype), items in groups.items():
        fresh = comm.broadcast_arrays(device, dtype, [t._data for _, t in items], root)
        for (_, t), data in zip(items, fresh):
            rebind(t, data)


class DistributedOptimizer(Optimizer):
    """``optimizer`` whose updates use the gradients averaged over all ranks of ``comm``.

    An :class:`~fastnn.optim.Optimizer` itself (as Horovod's wrapper is), so that
    schedules and other code that takes an optimizer take it; its groups, state and
    hyper-parameters are the wrapped optimizer's own objects.

    ``step(samples=None)`` and ``apply_gradients(pairs, samples=None)``: ``samples``
    is how many samples this rank's gradient is the mean over (default: the
    ``samples`` attribute, else 1 for every rank: a plain mean). Set
    ``opt.samples = n`` before ``model.apply(opt, grads)`` when shards differ in size.
    """

    def __init__(self, optimizer, comm: Communicator):
        # no Optimizer.__init__: the groups and the state are the wrapped optimizer's
        if not (hasattr(optimizer, "apply_gradients") and hasattr(optimizer, "param_groups")):
            raise TypeError(f"DistributedOptimizer: expected a fastnn optimizer (such as "
                            f"optim.SGD(model.parameters())), got {type(optimizer).__name__}")
        _check_comm("DistributedOptimizer", comm)
        self.optimizer, self.comm = optimizer, comm
        self.samples = None
        self._synchronized = False  # synchronize() has averaged the .grad of this step
        self._checked: set = set()  # parameter layouts every rank is known to share
        self._index_parameters()

    def _index_parameters(self) -> None:
        params = self._params()
        self._index = {id(p): i for i, p in enumerate(params)}
        check_same_layout(self.comm, "DistributedOptimizer",
                          [(f"parameter {i}", tuple(p.shape), p.dtype.name, p.requires_grad)
                           for i, p in enumerate(params)])

    def __repr__(self) -> str:
        return f"DistributedOptimizer({self.optimizer!r}, {self.comm!r})"

    def _params(self) -> list:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    # ------------------------------------------------------------ the wrapped optimizer
    @property
    def param_groups(self) -> list:
        return self.optimizer.param_groups

    @property
    def state(self) -> dict:
        return self.optimizer.state

    @property
    def defaults(self) -> dict:
        return self.optimizer.defaults

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def add_param_group(self, group: dict) -> None:
        """Add a group to the wrapped optimizer (on every rank: the ranks check they agree)."""
        self.optimizer.add_param_group(group)
        self._index_parameters()

    def state_dict(self) -> dict:
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        self.optimizer.load_state_dict(state_dict)

    # ------------------------------------------------------------ updates
    def step(self, samples=None) -> None:
        """Average every trainable parameter's ``.grad`` over the ranks, then update
        (after :meth:`synchronize`, update with the gradients it averaged)."""
        if self._synchronized:
            self._synchronized = False
            pairs = [(p, p.grad) for p in self._params() if p.grad is not None]
            self.optimizer.apply_gradients(pairs)
            return
        pairs = [(p, p.grad) for p in self._params() if p.requires_grad]
        self._update(pairs, samples)

    def synchronize(self, samples=None) -> None:
        """Replace every trainable parameter's ``.grad`` by its average over the ranks now,
        for code that reads the gradients before the update (``clip_grad_norm`` must see
        the averaged ones, or each rank clips by its own norm); ``step()`` then uses them."""
        pairs = [(p, p.grad) for p in self._params() if p.requires_grad]
        averaged = dict((id(p), g) for p, g in self._average(pairs, samples))
        for p, _ in pairs:
            p.grad = averaged.get(id(p))
        self._synchronized = True

    def apply_gradients(self, pairs, samples=None) -> None:
        """Average explicit ``(parameter, gradient)`` pairs over the ranks, then update.

        Every rank must pass the same parameters in the same order (the same layer's
        ``apply``), as for any collective; the first time a set is seen the ranks
        check that they agree.
        """
        self._update(list(pairs), samples)

    def _update(self, pairs, samples) -> None:
        self.optimizer.apply_gradients(self._average(pairs, samples))

    def _average(self, pairs, samples) -> list:
        n = self._samples(samples)
        # in the optimizer's order, whatever order the caller's dict had (a Sequential's
        # reverse fills its dict from the last layer): the ranks' buffers must line up
        pairs = sorted(pairs, key=lambda pair: self._position(pair[0]))
        layout = tuple(self._position(p) for p, _ in pairs)
        if layout not in self._checked:
            check_same_layout(self.comm, "DistributedOptimizer",
                              [(i, tuple(p.shape), p.dtype.name)
                               for i, (p, _) in zip(layout, pairs)])
            self._checked.add(layout)
        return average_gradients(self.comm, pairs, n)

    def _position(self, p) -> int:
        position = self._index.get(id(p))
        if position is None:
            raise ValueError(
                f"DistributedOptimizer: got a gradient for a parameter of shape "
                f"{getattr(p, 'shape', '?')} that the wrapped optimizer does not hold; build "
                "it with model.parameters()")
        return position

    def _samples(self, samples) -> float:
        samples = self.samples if samples is None else samples
        if samples is None:
            return 1.0
        return float(integer("DistributedOptimizer", "samples", samples, minimum=0))


def average_gradients(comm: Communicator, pairs: list, samples: float,
                      over_ranks: bool = False) -> list:
    """``pairs`` with each gradient replaced by its sample-weighted mean over the ranks.

    A gradient that is None (or any gradient, when ``samples`` is 0) counts with
    weight 0; a parameter whose total weight is 0 is left out of the result.
    ``over_ranks=True`` divides the sum by ``comm.size * samples`` instead (PyTorch
    DDP's mean: a rank without a gradient contributes zeros).
    """
    entries = []  # ((device, dtype on the wire), param, raw data or None)
    for p, g in pairs:
        data = None if (g is None or samples == 0) else _raw_grad(p, g)
        wire = p._dtype.name
        # NOTE: a half-precision gradient times a sample count overflows (20 * 4096 is past
        # float16's 65504): weighted ones travel in float32 (the optimizer casts back)
        if wire not in _WIDE and samples != 1.0:
            wire = "float32"
            data = None if data is None else p._device.ops.astype(data, wire)
        entries.append(((p._device, wire), p, data))
    weights = np.array([0.0 if data is None else samples for _, _, data in entries])
    groups = _grouped(entries)
    # the weights ride with the first group that holds a count exactly (else alone)
    home = next((key for key in groups if key[1] in _WIDE), None)
    if home is None:
        home = (entries[0][0][0], "float32") if entries else None
        if home is not None:
            groups[home] = []
    reduced_weights = None
    results: dict = {}
    for key, items in groups.items():
        device, dtype = key
        ops = device.ops
        arrays = []
        for _, p, data in items:
            if data is None:
                data = ops.full(p.shape, 0, dtype, device.index)
            elif samples != 1.0:
                data = ops.mul(data, samples)
            arrays.append(data)
        if key == home:
            arrays.append(ops.from_numpy(weights.astype(dtype), device.index))
        out = comm.allreduce_arrays(device, dtype, arrays, "sum")
        if key == home:
            weights_out = out.pop()
            reduced_weights = _sample_totals(ops, weights_out)
        for (_, p, _), summed in zip(items, out):
            results[id(p)] = summed
    averaged = []
    for n, (((_, wire), p, _), total) in enumerate(zip(entries, reduced_weights if entries
                                                       else ())):
        if total > 0:
            divisor = float(total)
            if over_ranks:
                divisor = float(comm.size * samples)
            elif recording() and p._device is home[0]:  # fnn.compile: divide on the device
                divisor = _total_on_device(p._device.ops, weights_out, n, wire)
            data = p._device.ops.div(results[id(p)], divisor)
            averaged.append((p, Tensor._make(data, as_dtype(wire), p._device)))
    return averaged


def _sample_totals(ops, weights):
    """The summed sample weights on the host: which parameters got a gradient on some rank
    (the same for every call of one compiled signature: the ranks run one model)."""
    return np.asarray(ops.to_numpy(weights), dtype=np.float64)


def _total_on_device(ops, weights, n: int, wire: str):
    """Entry ``n`` of the summed weights as a 0-d device array of dtype ``wire`` (what a
    recorded step divides by, so that its replay follows the ranks' counts)."""
    total = ops.reshape(ops.slice(weights, (n,), (n + 1,), (1,)), ())
    return total if str(weights.dtype) == wire else ops.astype(total, wire)


def _raw_grad(p, g):
    """``g`` as a backend array of ``p``'s shape, dtype and device."""
    if not isinstance(g, Tensor):
        g = tensor(g, dtype=p.dtype, device=p.device)
    if g.shape != p.shape:
        raise ValueError(f"DistributedOptimizer: gradient shape {g.shape} does not match "
                         f"parameter shape {p.shape}")
    if g.dtype is not p.dtype or g.device != p.device:
        g = g.to(p.device).to(p.dtype)
    return g._data


def _check_comm(where: str, comm) -> None:
    if not isinstance(comm, Communicator):
        raise TypeError(f"{where}: comm must be the Communicator that "
                        f"fastnn.distributed.init() returns, got {type(comm).__name__}")
