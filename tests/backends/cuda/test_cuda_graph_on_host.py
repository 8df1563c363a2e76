"""The CUDA backend's ``compile_program`` (fastnn_cuda.graph) without a GPU.

Everything but cupy's stream capture runs here: the segmenting of a program into graph
and plain parts, the capture pass, the copies into the captured input buffers, the plain
results fed to later graphs, the in-place writes copied back, and the outputs copied out
of the graphs' memory. The capture object stands in for a CUDA graph: capturing runs the
segment once on scratch copies (a real capture executes nothing) to get its result
buffers, and each launch re-runs it on the captured buffers and writes its results into
those same buffers, as a graph's fixed addresses would. Training steps through
``fnn.compile`` with it must equal eager steps bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fastnn_cuda import graph

from fastnn.api import program as programs
from tests.backends.cuda.host_build import DevArray
from tests.capture.test_compile import _train


def _root(x):
    while x.base is not None and isinstance(x.base, np.ndarray):
        x = x.base
    return x


class FakeGraph:
    def __init__(self, log, run, values, result):
        self.log, self.run, self.values, self.result = log, run, values, result

    def launch(self):
        self.log.append("launch")
        with np.errstate(all="ignore"):
            new = self.run(self.values)
        for dst, src in zip(self.result, new):
            if dst is not src:
                np.copyto(dst, src)


class FakeCapture:
    log: list = []

    def __init__(self, device_id):
        self.device_id = device_id

    def capture(self, run, values):
        self.log.append(f"capture {len(values)}")
        scratch = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
        with np.errstate(all="ignore"):
            result = run(scratch)
        # a result that is one of the segment's inputs is that input (as on the GPU)
        back = {id(s): v for s, v in zip(scratch, values)}
        # NumPy's 0-d results are scalars; a GPU's are arrays (buffers a launch rewrites)
        result = [back.get(id(r), np.array(r) if isinstance(r, np.generic) else r)
                  for r in result]
        return FakeGraph(self.log, run, values, result), result

    def launch(self, g):
        g.launch()

    def empty(self, shape, dtype):
        return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 0, dtype)

    def copy(self, dst, src):
        self.log.append("copy")
        np.copyto(dst, src)

    def fresh(self, x):
        self.log.append("fresh")
        return x.copy()

    root = staticmethod(_root)


@pytest.fixture
def fake_graphs(monkeypatch):
    FakeCapture.log = []
    plans = []

    def compile_program(program):
        run = graph.compile_program(program, FakeCapture,
                                    is_array=lambda x: isinstance(x, np.ndarray))
        plans.append(run)
        return run

    monkeypatch.setattr(programs, "compile_program", compile_program)
    return plans


@pytest.mark.parametrize("model_name,opt_name,dropout", [
    ("mlp", "sgd", False), ("mlp", "adam", True), ("conv1d", "sgd", True),
    ("conv1d", "adam", False)])
def test_steps_through_graphs_equal_eager_bit_for_bit(fake_graphs, model_name, opt_name,
                                                      dropout):
    m1, o1, l1, rng1, _ = _train(model_name, opt_name, dropout, compiled=False, steps=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no capture failure
        m2, o2, l2, rng2, step = _train(model_name, opt_name, dropout, compiled=True,
                                        steps=16)
    for (name, a), (_, b) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    for a, b in zip(l1, l2):
        assert np.array_equal(a, b)
    assert rng1 == rng2
    plans = [p.state["plan"] for p in fake_graphs if p.state["plan"] is not None]
    assert plans, "no program was captured"
    for plan in plans:
        kinds = [seg.capturable for seg in plan.segments]
        assert True in kinds and False in kinds  # the optimizer step (lr input) runs plain
    assert FakeCapture.log.count("launch") >= 10


def test_inputs_are_copied_in_and_inplace_writes_copied_back(fake_graphs, monkeypatch):
    """A replay whose arguments are not the captured buffers: copied in, their in-place
    writes copied back, and no output aliases the graphs' memory."""
    seen = []
    run = graph.GraphPlan.run
    monkeypatch.setattr(graph.GraphPlan, "run",
                        lambda self, inputs: seen.append((self, list(inputs))) or run(self,
                                                                                      inputs))
    _train("mlp", "sgd", False, compiled=True, steps=6)
    plan, last = seen[-1]
    program = plan.program

    def copies():
        return [x.copy() if isinstance(x, np.ndarray) else x for x in last]

    given, before = copies(), copies()
    reference_inputs = copies()
    reference = programs.interpreter(program)(reference_inputs)
    FakeCapture.log.clear()
    got = plan.run(given)
    assert FakeCapture.log.count("copy") >= 2 and "launch" in FakeCapture.log
    for a, b in zip(got, reference):
        np.testing.assert_array_equal(a, b)
    assert not any(id(_root(x)) in plan.private for x in got if isinstance(x, np.ndarray))
    # the graph's outputs leave through one copy of the staging arena, as views of it
    assert plan.layout and FakeCapture.log.count("fresh") == 1
    assert sum(_root(x) is _root(got[program.outputs.index(i)]) for i in plan.layout
               for x in got) >= len(plan.layout)
    assert plan.mutated  # the parameters and momentum buffers, updated in place
    for n in plan.mutated:  # the caller's arrays hold what the eager interpreter wrote
        np.testing.assert_array_equal(given[n], reference_inputs[n])
        assert not np.array_equal(given[n], before[n])


def test_a_failed_capture_falls_back_once_with_a_warning(monkeypatch):
    class Broken(FakeCapture):
        def capture(self, run, values):
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: a host sync")

    plans = []

    def compile_program(program):
        plans.append(graph.compile_program(program, Broken,
                                           is_array=lambda x: isinstance(x, np.ndarray)))
        return plans[-1]

    monkeypatch.setattr(programs, "compile_program", compile_program)
    graph._said.clear()
    m1, _, l1, _, _ = _train("mlp", "sgd", False, compiled=False, steps=8)
    with pytest.warns(UserWarning, match="runs without CUDA graphs .*host sync"):
        m2, _, l2, _, _ = _train("mlp", "sgd", False, compiled=True, steps=8)
    for (name, a), (_, b) in zip(m1.named_parameters(), m2.named_parameters()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    assert all(p.state["plan"] is None for p in plans)


def test_segments_cut_at_number_inputs_and_host_hooks():
    import fastnn as fnn
    from fastnn.api.program import Call, Program, Slot

    dev = fnn.Device("cpu")
    calls = [Call(dev, "exp", [Slot(0)], {}, Slot(2)),
             Call(dev, "mul", [Slot(2), Slot(1)], {}, Slot(3)),  # %1: a number input
             Call(dev, "add", [Slot(3), Slot(2)], {}, Slot(4)),
             Call(dev, "uniform", [(2,), "float32", 0, 7], {}, Slot(5)),
             Call(dev, "add", [Slot(4), Slot(5)], {}, Slot(6)),
             Call(dev, "assign", [Slot(5), Slot(6)], {}, None),  # into a plain result
             Call(dev, "assign", [Slot(0), Slot(6)], {}, None),  # into an input
             Call(dev, "reshape", [Slot(5), (2, 1)], {}, Slot(7)),  # a view of a plain result
             Call(dev, "assign", [Slot(7), Slot(7)], {}, None)]  # a write through it
    prog = Program("p", calls, [0, 1], [6, 5], {})
    segs = graph.segments(prog, {1})
    assert [s.capturable for s in segs] == [True, False, True, False, True, False, True,
                                            False]
    assert [s.outs for s in segs] == [[2], [3], [4], [5], [6], [], [7], []]
    assert [len(s.calls) for s in segs] == [1, 1, 1, 1, 1, 1, 2, 1]
    assert graph.written_slots(prog) == {5, 0, 7}
    assert segs[2].reads == [3, 2]


def test_cusolver_hooks_run_plain_between_graphs():
    """cupy refuses cuSOLVER in a capture: a linalg hook is a plain segment, and what it
    returns reaches the next graph through a buffer."""
    import fastnn as fnn
    from fastnn.api.program import Call, Program, Seq, Slot

    dev = fnn.Device("cpu")
    solved = Seq(tuple, [Slot(3), Slot(4)])
    calls = [Call(dev, "exp", [Slot(0)], {}, Slot(2)),
             Call(dev, "linalg_solve", [Slot(2), Slot(1)], {}, solved),
             Call(dev, "add", [Slot(3), Slot(1)], {}, Slot(5))]
    segs = graph.segments(Program("p", calls, [0, 1], [5], {}), set())
    assert [s.capturable for s in segs] == [True, False, True]
    assert segs[1].outs == [3] and segs[2].reads == [3, 1]
    assert {"linalg_solve", "linalg_qr", "linalg_eigh", "linalg_svd",
            "linalg_slogdet"} <= graph.EAGER


def test_the_cupy_capture_object_brackets_the_work(monkeypatch):
    """CupyCapture against a recording stand-in for cupy: the work runs between
    begin_capture and end_capture on its own non-blocking stream, with the private pool's
    allocator and the matrix products sent to this thread's cuBLAS handle (bound to the
    stream and to a workspace from the pool before the capture begins), and a failure
    still ends the capture before it propagates."""
    from types import SimpleNamespace

    from fastnn_cuda import _cupy, capture, cublas_lib, gemm

    log = []

    class Ctx:
        def __init__(self, name):
            self.name = name
            self.compute_capability = "90"

        def __enter__(self):
            log.append(f"enter {self.name}")

        def __exit__(self, *exc):
            log.append(f"exit {self.name}")

    class Stream(Ctx):
        ptr = 1234

        def __init__(self, non_blocking=False):
            super().__init__("stream")
            log.append(f"stream non_blocking={non_blocking}")

        def begin_capture(self):
            log.append("begin")

        def end_capture(self):
            log.append("end")
            return SimpleNamespace(launch=lambda: log.append("launch"))

    class Handle:
        def bind(self, stream_ptr, workspace_ptr, nbytes):
            log.append(f"bind {stream_ptr} {nbytes >> 20} MiB")
            assert workspace_ptr == cap.workspace.data.ptr

    handle = Handle()
    monkeypatch.setattr(cublas_lib, "handle", lambda device_id: log.append(
        f"handle {device_id}") or handle)
    pool = SimpleNamespace(malloc="private malloc")
    fake = SimpleNamespace(
        cuda=SimpleNamespace(Device=lambda i: Ctx(f"device {i}"), Stream=Stream,
                             MemoryPool=lambda: pool,
                             using_allocator=lambda malloc: Ctx(f"allocator {malloc}")),
        empty=lambda shape, dtype: log.append(f"empty {shape}") or DevArray(shape, dtype))
    monkeypatch.setattr(_cupy, "cupy", fake)
    cap = capture.CupyCapture(3)
    assert log == ["enter device 3", "stream non_blocking=True", "exit device 3",
                   "enter device 3", "enter allocator private malloc", f"empty ({32 << 20},)",
                   "exit allocator private malloc", "exit device 3"]
    log.clear()

    def work(values):
        log.append(f"work, products to {'the handle' if gemm._state.blas is handle else None}")
        return [values[0] + 1]

    graph_obj, result = cap.capture(work, [1])
    assert result == [2]
    assert log == ["enter device 3", "enter allocator private malloc", "enter stream",
                   "handle 3", "bind 1234 32 MiB", "begin", "work, products to the handle",
                   "end", "exit stream", "exit allocator private malloc", "exit device 3"]
    assert gemm._state.blas is None
    log.clear()
    cap.launch(graph_obj)
    assert log == ["launch"]
    log.clear()

    def broken(values):
        raise RuntimeError("cudaErrorStreamCaptureUnsupported")

    with pytest.raises(RuntimeError, match="CaptureUnsupported"):
        cap.capture(broken, [])
    assert log[5:8] == ["begin", "end", "exit stream"]
    assert gemm._state.blas is None
    log.clear()
    assert cap.empty((2,), "float32").shape == (2,)
    assert log == ["enter device 3", "enter allocator private malloc", "empty (2,)",
                   "exit allocator private malloc", "exit device 3"]
