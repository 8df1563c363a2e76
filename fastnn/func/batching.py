"""PyTorch's ``torch.func.vmap``: map a function over a dimension of its inputs.

NOTE: fastnn's vmap is a loop, not batching rules. It calls ``func`` once per index of
the mapped dimension, on the inputs sliced there (``x[:, i]``), and stacks the results
along ``out_dims``. The values, the argument handling (``in_dims`` per argument, nested
tuples/lists/dicts, None for an unmapped argument, negative dimensions), the results'
structure and the error messages are PyTorch's; the cost is ``batch_size`` calls of
``func`` (see benchmarks/bench_func.py for how it compares with a hand-batched version).
Because every call is an ordinary eager call, anything ``func`` can do works inside:
``vmap(grad(f))`` for per-sample gradients, ``vmap(jacrev(f))``, nested vmaps, and
data-dependent control flow (which PyTorch's vmap rejects).

What differs from PyTorch's:

- a mapped dimension of size 0 calls ``func`` once, on zeros shaped as one example, to
  learn the outputs' structure, shapes and dtypes (PyTorch's one batched call sees no
  example either); the default generator is left as it was, and the outputs are empty;
- ``out_dims=None`` for an output returns the first call's value if every call returned
  the same object or equal values, and raises PyTorch's error otherwise (a value that does
  not depend on the mapped inputs is equal across calls);
- ``randomness='error'`` raises on random ops that draw from fastnn's default generator
  (``fnn.manual_seed``'s: ``randn``, ``rand``, dropout, ...); one given an explicit
  ``generator=`` is not checked. ``'same'`` restarts the default generator from its state at
  entry for every call (so all samples draw the same numbers); ``'different'`` lets it run.
- ``chunk_size`` is checked and otherwise has no effect (one call per index anyway);
- in-place writes into a mapped input go through to the caller's tensor slice by slice,
  where PyTorch may refuse some (writing a batched value into an unbatched tensor).
"""

from __future__ import annotations

import contextlib
import copy
import functools

from fastnn.func import pytree
from fastnn.ops import rng_state
from fastnn.ops.elementwise_more import equal
from fastnn.ops.joining import stack
from fastnn.ops.tensor import Tensor

_ALL = slice(None)
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                 "either use the 'same' or 'different' randomness flags on vmap or perform "
                 "the randomness operation out of vmap")


class _RandomnessError:
    """Stands in for the default generator inside ``vmap(..., randomness='error')``."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(_RANDOM_ERROR)


def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _batched_inputs(func, in_dims, args: tuple) -> tuple[int, list, list, object]:
    """(batch size, the in_dim of each leaf of args, the leaves, args' spec)."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         "to be int or a (potentially nested) tuple matching the structure "
                         f"of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    flat_args, spec = pytree.flatten(args)
    flat_dims = pytree.broadcast(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         "compatible with the structure of `inputs`. in_dims has structure "
                         f"{pytree.describe(pytree.flatten(in_dims)[1])} but inputs has "
                         f"structure {pytree.describe(spec)}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_dims)):
        if in_dim is not None and (not isinstance(in_dim, int) or isinstance(in_dim, bool)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for an input but in_dim must be either an "
                             "integer dimension or None.")
        if in_dim is None:
            continue
        if not isinstance(arg, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if not -arg.dim() <= in_dim < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={in_dim} for some input, but that input is a Tensor of "
                             f"dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        flat_dims[i] = in_dim % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


def _check_out_dims(func, out_dims) -> None:
    leaves = pytree.flatten(out_dims)[0]
    if any(not isinstance(d, int) or isinstance(d, bool) for d in leaves if d is not None):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be "
                         "an int, None or a python collection of ints representing where in "
                         "the outputs the vmapped dimension should appear.")


def _same_across(values: list) -> bool:
    first = values[0]
    for value in values[1:]:
        if value is first:
            continue
        if isinstance(first, Tensor) and isinstance(value, Tensor):
            if first.shape != value.shape or not equal(first.detach(), value.detach()):
                return False
        elif isinstance(first, Tensor) or isinstance(value, Tensor) or value != first:
            return False
    return True


def _stacked_outputs(func, results: list, out_dims, empty: bool = False):
    """The calls' results stacked leaf by leaf along their out_dim (``empty``: the one
    result of a size-0 batch's probe call, whose stack keeps none of it)."""
    name = _name(func)
    flat, spec = pytree.flatten(results[0])
    columns = [[leaf] for leaf in flat]
    for result in results[1:]:
        leaves, other = pytree.flatten(result)
        if other != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different "
                             f"structures for different indices: {pytree.describe(spec)} "
                             f"and {pytree.describe(other)}")
        for column, leaf in zip(columns, leaves):
            column.append(leaf)
    if spec == pytree.LEAF and isinstance(out_dims, tuple) and len(out_dims) == 1:
        flat_dims = list(out_dims)
    elif spec == pytree.LEAF and (out_dims is None or isinstance(out_dims, int)):
        flat_dims = [out_dims]
    else:
        flat_dims = None if spec == pytree.LEAF else pytree.broadcast(out_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{pytree.describe(pytree.flatten(out_dims)[1])} but outputs has "
                         f"structure {pytree.describe(spec)}.")
    stacked = []
    for column, out_dim in zip(columns, flat_dims):
        if out_dim is None:
            if not _same_across(column):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a "
                                 "BatchedTensor when out_dim is None")
            stacked.append(column[0])
            continue
        for value in column:
            if not isinstance(value, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(value)}. Did you mean to set out_dims= to None "
                                 "for output?")
        out = stack(column, dim=out_dim)
        stacked.append(out.narrow(out_dim, 0, 0) if empty else out)
    return pytree.unflatten(stacked, spec)


@contextlib.contextmanager
def _randomness(mode: str):
    """Yields what to call before each index: nothing, or (for 'same') a restart of the
    default generator from its state at entry."""
    saved = rng_state.host_rng()
    if mode == "error":
        rng_state.set_host_rng(_RandomnessError())
        try:
            yield lambda: None
        finally:
            rng_state.set_host_rng(saved)
        return
    bits = getattr(saved, "bit_generator", None)
    if mode == "different" or bits is None:
        yield lambda: None
        return
    start = copy.deepcopy(bits.state)

    def restart():
        bits.state = copy.deepcopy(start)

    yield restart


def _example_call(func, flat_args, flat_dims, spec, kwargs, randomness: str):
    """``func`` on zeros shaped as one example of a size-0 batch, to learn what it returns;
    the default generator is left as it was (the batch draws no numbers)."""
    examples = [arg if dim is None else arg.new_zeros(arg.shape[:dim] + arg.shape[dim + 1:])
                for arg, dim in zip(flat_args, flat_dims)]
    with _randomness("error" if randomness == "error" else "same") as restart:
        try:
            return func(*pytree.unflatten(examples, spec), **kwargs)
        finally:
            restart()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs: ``vmap(f)(x)[i] == f(x[i])``.

    - ``in_dims``: the mapped dimension of each positional argument (an int or None for
      all, or a tuple with one entry per argument, nested like the arguments; None leaves
      an argument unmapped). Keyword arguments are passed unmapped.
    - ``out_dims``: where the mapped dimension goes in each output (int, None, or a tree).
    - ``randomness``: 'error', 'different' or 'same' (see the module's notes).
    A loop over the mapped dimension: see the module's docstring for what that implies.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    _check_out_dims(func, out_dims)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        size, flat_dims, flat_args, spec = _batched_inputs(func, in_dims, args)
        if size == 0:
            return _stacked_outputs(func, [_example_call(func, flat_args, flat_dims, spec,
                                                         kwargs, randomness)], out_dims, True)
        results = []
        with _randomness(randomness) as restart:
            for index in range(size):
                restart()
                # indexing: the same view as select(dim, index), and cheaper per call
                sliced = [arg if dim is None else arg[(_ALL,) * dim + (index,)]
                          for arg, dim in zip(flat_args, flat_dims)]
                results.append(func(*pytree.unflatten(sliced, spec), **kwargs))
        return _stacked_outputs(func, results, out_dims)

    return wrapped
