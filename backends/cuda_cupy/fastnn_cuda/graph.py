"""A recorded program (``fnn.compile``) replayed as CUDA graphs: one launch for a whole step.

The program is cut into segments: runs of calls that a CUDA graph can hold, and the calls
that must run as plain hooks on every replay (those reading a number input, such as an
optimizer step's learning rate or a dropout seed, whose values change between steps, the
host-side hooks of :data:`EAGER` and the cuSOLVER ones cupy refuses to capture, and in-place
writes into what a plain call returned).
A typical training step is one graph (forward and backward) followed by the optimizer's one
launch.

The first run of the returned function is the core's interpreter (a warm-up: kernels
compile, cuBLAS sets up). The second captures every graph segment with cupy's stream
capture on a private stream and a private memory pool, nothing executing, using that run's
input arrays as the graphs' input buffers, then replays. Every replay:

- copies each array input into its captured buffer, unless it is that buffer (parameters
  the optimizer updates in place are: they cost nothing);
- launches each graph segment on the current stream, runs each plain segment, and copies
  the plain results that a later graph reads into the buffers that graph was captured with;
- copies back into an argument the in-place writes made to its buffer, where the argument
  is not the buffer itself;
- returns the outputs: an input's buffer as that input, a plain call's result as it is, and
  a copy of any value living in the graphs' memory (the next replay overwrites it). The
  graphs themselves copy their outputs into one staging arena as their last launches, so a
  replay takes one copy of the arena and hands out views of it, not one copy per output
  (outputs that a later call writes into in place are copied one by one at the end).

The graphs' memory (values crossing segments, and what their calls allocate) comes from a
private pool that nothing else allocates from, so no freed block can be handed out while a
graph still writes it. Where capture fails (a host sync, an allocation cupy cannot capture)
the program runs on the interpreter from then on, said once; ``FASTNN_CUDA_GRAPHS=0`` turns
graphs off. ``fastnn_cuda.capture.CupyCapture`` is the only part that needs a GPU: the
tests run the rest with a capture object that records and re-runs what a graph would launch.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from fastnn.api.program import Program, Seq, Slot, impure, interpreter, slots_in
from fastnn_cuda import linalg

ENABLED = os.environ.get("FASTNN_CUDA_GRAPHS", "1") != "0"
ALIGN = 256  # bytes: where each output starts in the staging arena
WARMUP = 1  # interpreter runs before the capture
EAGER = frozenset({"from_numpy", "to_numpy", "uniform", "allreduce", "broadcast"}
                  | linalg.UNCAPTURABLE)
_said: set = set()


def compile_program(program: Program, make_capture=None, is_array=None):
    """``run(inputs) -> outputs`` for ``program`` (see the module); ``make_capture(device_id)``
    makes the capture object (:class:`fastnn_cuda.capture.CupyCapture` by default)."""
    plain = interpreter(program)
    if not ENABLED or not program.calls:
        return plain
    if make_capture is None:
        from fastnn_cuda.capture import CupyCapture as make_capture
    if is_array is None:
        from fastnn_cuda._cupy import cupy as cp

        def is_array(x):
            return isinstance(x, cp.ndarray)

    state = {"runs": 0, "plan": None}

    def run(inputs):
        plan = state["plan"]
        if plan is not None:
            return plan.run(inputs)
        if state["runs"] < WARMUP or state["runs"] < 0:
            state["runs"] += 1
            return plain(inputs)
        try:
            arrays = [x for x in inputs if is_array(x)]
            device_id = getattr(getattr(arrays[0], "device", None), "id", 0) if arrays else 0
            plan = GraphPlan(program, inputs, make_capture(device_id), is_array)
        except Exception as exc:
            state["runs"] = -(10**9)  # never again for this program
            note = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            if note not in _said:
                _said.add(note)
                warnings.warn(f"fastnn cuda: {program.name} runs without CUDA graphs (its "
                              f"capture failed: {note})", stacklevel=2)
            return plain(inputs)
        state["plan"] = plan
        return plan.run(inputs)

    run.plain = plain
    run.state = state
    return run


class _Segment:
    __slots__ = ("capturable", "graph", "calls", "reads", "outs", "run", "feeds", "values")

    def __init__(self, capturable: bool, calls: list):
        self.capturable, self.calls, self.graph = capturable, calls, None
        self.reads: list[int] = []
        self.outs: list[int] = []
        self.feeds: list[int] = []  # plain results a later graph reads (copied into buffers)
        self.values: list = []  # a graph's captured results (fixed buffers)
        self.run = None


def segments(program: Program, dynamic: set) -> list[_Segment]:
    """The program's calls cut into graph segments and plain ones (see the module)."""
    out: list[_Segment] = []
    plain_made: set = set()  # plain results (new arrays at every replay), and what a graph
    # makes of them (a view of one, maybe)
    for call in program.calls:
        reads = set(slots_in(call.args) + slots_in(call.kwargs))
        # an in-place write into a plain result must reach that very array, which a graph
        # (captured with a buffer standing in for it) would miss
        graph = call.name not in EAGER and not reads & dynamic and not (
            impure(call) and _written(call) & plain_made)
        if not graph or reads & plain_made:
            plain_made.update(slots_in(call.out))
        if not out or out[-1].capturable != graph:
            out.append(_Segment(graph, []))
        out[-1].calls.append(call)
    later: set = set(program.outputs)
    for seg in reversed(out):
        made, read = [], []
        for call in seg.calls:
            for i in slots_in(call.args) + slots_in(call.kwargs):
                if i not in made and i not in read:
                    read.append(i)
            made.extend(slots_in(call.out))
        seg.reads = read
        seg.outs = [i for i in dict.fromkeys(made) if i in later]
        later.update(read)
        seg.run = interpreter(Program(program.name, seg.calls, seg.reads, seg.outs,
                                      program.describe))
    return out


def mutated_inputs(program: Program) -> set:
    """Input slots some call may write into (an in-place write, an optimizer step)."""
    inputs, found = set(program.inputs), set()
    for call in program.calls:
        if impure(call):
            found.update(i for i in slots_in(call.args) + slots_in(call.kwargs) if i in inputs)
    return found


def _written(call) -> set:
    """Slots an impure call may write into: ``assign``'s destination; every argument of an
    optimizer step but its gradients (this backend's steps read them: ``const`` in
    cu/optim.cu, cu/optim_more.cu); every argument of anything else."""
    if call.name == "assign":
        return set(slots_in(call.args[:1]) + slots_in(call.kwargs.get("dst")))
    args = [a for k, a in enumerate(call.args) if not (k == 1 and call.name.endswith("_step"))]
    return set(slots_in(args) + slots_in(call.kwargs))


def written_slots(program: Program) -> set:
    """Slots some call of ``program`` may write into (see :func:`_written`)."""
    found = set()
    for call in program.calls:
        if impure(call):
            found |= _written(call)
    return found


def _shape_dtype(describe: dict, i: int):
    text = describe.get(i)
    if text is None:
        raise ValueError(f"no shape recorded for %{i}, which a graph reads")
    dtype, _, rest = text.partition("[")
    shape = tuple(int(d) for d in rest.rstrip("]").split(",") if d.strip())
    return shape, dtype


def _arena_layout(describe: dict, slots: list) -> tuple[dict, int]:
    """{slot: (offset, nbytes, shape, dtype)} of the staged outputs, and the arena's bytes."""
    layout, total = {}, 0
    for i in slots:
        shape, dtype = _shape_dtype(describe, i)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        layout[i] = (total, nbytes, shape, dtype)
        total += -(-max(nbytes, 1) // ALIGN) * ALIGN
    return layout, total


def _view(arena, offset, nbytes, shape, dtype):
    return arena[offset:offset + nbytes].view(dtype).reshape(shape)


def _staging(run, here: list, copy):
    """``run`` followed by copies of its results into their arena views (captured with it)."""
    def staged(values):
        results = run(values)
        for k, view in here:
            if tuple(results[k].shape) != tuple(view.shape):
                raise ValueError(f"an output has shape {results[k].shape}, recorded "
                                 f"{view.shape}")
            copy(view, results[k])
        return results

    return staged


class GraphPlan:
    """The captured program (see the module); built from the inputs of its first replay."""

    def __init__(self, program: Program, inputs: list, cap, is_array):
        self.program, self.cap = program, cap
        self.dynamic = {i for i, x in zip(program.inputs, inputs) if not is_array(x)}
        self.segments = segments(program, self.dynamic)
        if not any(seg.capturable for seg in self.segments):
            raise ValueError("no call can be captured")
        self.buffers = {i: x for i, x in zip(program.inputs, inputs) if is_array(x)}
        self.owner = {}  # id(buffer) -> input slot
        for i, x in self.buffers.items():
            self.owner.setdefault(id(x), i)
        self.index = {i: n for n, i in reversed(list(enumerate(program.inputs)))}
        mutated = mutated_inputs(program)
        self.mutated = [n for n, i in enumerate(program.inputs)
                        if i in mutated and i in self.buffers]
        self.placeholders: dict[int, object] = {}
        env: dict = dict(self.buffers)
        written = written_slots(program)  # final only at the end: not staged
        made = {i for seg in self.segments if seg.capturable for i in seg.outs}
        staged = [i for i in dict.fromkeys(program.outputs) if i in made and i not in written
                  and i not in self.buffers and i in program.describe]
        self.layout, total = _arena_layout(program.describe, staged)
        self.arena = cap.empty((total,), "uint8") if total else None
        views = {i: _view(self.arena, *spot) for i, spot in self.layout.items()}
        graph_reads = [set(seg.reads) if seg.capturable else set() for seg in self.segments]
        for n, seg in enumerate(self.segments):
            if seg.capturable:
                here = [(k, views[i]) for k, i in enumerate(seg.outs) if i in views]
                run = _staging(seg.run, here, cap.copy) if here else seg.run
                graph, values = cap.capture(run, [env[i] for i in seg.reads])
                seg.graph, seg.values = graph, list(values)
                env.update(zip(seg.outs, seg.values))
                continue
            wanted = set().union(*graph_reads[n + 1:]) if n + 1 < len(graph_reads) else set()
            for i in seg.outs:
                if i in wanted:
                    shape, dtype = _shape_dtype(program.describe, i)
                    env[i] = self.placeholders[i] = cap.empty(shape, dtype)
                    seg.feeds.append(i)
        # memory owned by the graphs: their results and the plain results' buffers
        self.private = {id(cap.root(x)) for seg in self.segments for x in seg.values
                        if is_array(x)}
        self.private.update(id(cap.root(x)) for x in self.placeholders.values())
        self.private.difference_update(id(cap.root(x)) for x in self.buffers.values())

    def run(self, inputs: list) -> list:
        cap, buffers, owner = self.cap, self.buffers, self.owner
        env = {}
        staged = []
        for i, x in zip(self.program.inputs, inputs):
            buf = buffers.get(i)
            if buf is None or x is buf:
                env[i] = x if buf is None else buf
                continue
            if owner.get(id(x), i) != i:  # another input's buffer: read it before it changes
                x = cap.fresh(x)
            staged.append((buf, x))
            env[i] = buf
        for buf, x in staged:
            cap.copy(buf, x)
        for seg in self.segments:
            if seg.graph is not None:
                cap.launch(seg.graph)
                env.update(zip(seg.outs, seg.values))
                continue
            values = seg.run([env[i] for i in seg.reads])
            env.update(zip(seg.outs, values))
            for i in seg.feeds:
                if env[i] is not self.placeholders[i]:
                    cap.copy(self.placeholders[i], env[i])
        names, index = self.program.inputs, self.index
        for n in self.mutated:
            buf = buffers[names[n]]
            if inputs[n] is not buf:
                cap.copy(inputs[n], buf)
        out = []
        private, layout = self.private, self.layout
        arena = cap.fresh(self.arena) if self.arena is not None else None
        for i in self.program.outputs:
            x = env[i]
            k = owner.get(id(x))
            if k is not None:
                x = inputs[index[k]]
            elif i in layout:
                x = _view(arena, *layout[i])
            elif private and hasattr(x, "shape") and id(cap.root(x)) in private:
                x = cap.fresh(x)
            out.append(x)
        return out


__all__ = ["EAGER", "ENABLED", "GraphPlan", "Seq", "Slot", "compile_program", "mutated_inputs",
           "segments", "written_slots"]
