"""opencl launch lists: the optimizer update replays inside the list (its learning rate and
step count read at each replay), and every eager fast path is seen by the trace."""

from pathlib import Path

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.api import fusion
from tests.steps import classification_step

DEV = "opencl"


def _opt(kind, params):
    if kind == "sgd":
        return optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-2, nesterov=True)
    if kind == "sgd-plain":
        return optim.SGD(params, lr=0.1)
    if kind == "adam":
        return optim.Adam(params, lr=0.02, weight_decay=1e-2)
    if kind == "amsgrad":
        return optim.Adam(params, lr=0.02, amsgrad=True)
    if kind == "rmsprop":
        return optim.RMSprop(params, lr=0.01, weight_decay=1e-2)
    return optim.AdamW(params, lr=0.02, weight_decay=0.1)


HOOKS = {"sgd": "sgd_step", "sgd-plain": "sgd_step", "adam": "adam_step",
         "adamw": "adam_step", "amsgrad": "amsgrad_step", "rmsprop": "rmsprop_step"}


def _train(kind, compiled, steps=7):
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).to(DEV)
    opt = _opt(kind, model.parameters())
    # the learning rate changes at every step: a program input, never baked in
    sched = optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 / (1 + 0.37 * k))

    step = classification_step(model, opt)

    fn = fnn.compile(step) if compiled else step
    data = np.random.default_rng(4)
    losses = []
    for _ in range(steps):
        x = fnn.tensor(data.standard_normal((6, 5)).astype(np.float32), device=DEV)
        y = fnn.tensor(data.integers(0, 3, 6), device=DEV)
        losses.append(fn(x, y).numpy())
        sched.step()
    return model, opt, losses, fn


@pytest.mark.parametrize("kind", [
    "sgd", "adam", "adamw", *(pytest.param(k, marks=pytest.mark.slow)
                             for k in ("sgd-plain", "amsgrad", "rmsprop"))])
def test_optimizer_updates_replay_in_the_list_equal_to_eager(ocl, kind):
    m1, o1, l1, _ = _train(kind, compiled=False)
    m2, o2, l2, step = _train(kind, compiled=True)
    for a, b in zip(l1, l2):
        assert np.array_equal(a, b)
    for (key, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert np.array_equal(np.asarray(a), np.asarray(b)), key
    s1, s2 = o1.state_dict()["state"], o2.state_dict()["state"]
    for key, st in s1.items():
        for what, value in st.items():
            assert np.array_equal(np.asarray(value), np.asarray(s2[key][what])), (key, what)
    assert step.stats["replayed"] >= 4
    fast = step._last.program.runner().__self__.fast
    hook = HOOKS[kind]
    # one launch per parameter (2 weights, 2 biases) in the list, the hook not called
    assert fast.launched.count(hook) == 4
    assert len(fast.launched) > 4
    assert f"f{hook}" not in fast.source and "_r = f" not in fast.source


def _negate_kernel(dev):
    import pyopencl as cl

    source = ("__kernel void k_negate(__global float *out, __global const float *x, "
              "const int n) { const int i = get_global_id(0); if (i < n) out[i] = -x[i]; }")
    return cl.Kernel(cl.Program(dev.context, source).build(), "k_negate")


def _compiled_negations(monkeypatch, neg):
    """Replays of a step whose ``neg`` is ``neg``, on new inputs each time: (the results
    and what -x @ w gives, the replay's launch list)."""
    from fastnn.api.registry import get_backend

    monkeypatch.setattr(fusion, "ENABLED", False)
    monkeypatch.setattr(get_backend(DEV).ops, "neg", neg)
    rng = np.random.default_rng(5)
    w = fnn.tensor(rng.standard_normal((4, 4)).astype(np.float32), device=DEV)
    step = fnn.compile(lambda t: (-t) @ w)
    got, want = [], []
    for _ in range(5):
        data = rng.standard_normal((4, 4)).astype(np.float32)
        got.append(step(fnn.tensor(data, device=DEV)).numpy())
        want.append((-data) @ w.numpy())
    return got, want, step._last.program.runner().__self__.fast


def test_a_new_fast_path_through_the_one_launch_is_captured(ocl, monkeypatch):
    from fastnn_opencl import fast_launch
    from fastnn_opencl.runtime import CLArray

    kept = {}

    def neg(x):  # a fast path as fast_launch's: a kept kernel, only changed arguments set
        dev = x.dev
        kernel = kept.get("kernel") or kept.setdefault("kernel", _negate_kernel(dev))
        out = CLArray(dev.pool.allocate(x.size * 4), x.shape, x.strides, 0, x.dtype, dev)
        kernel.set_arg(0, out.data)
        if kept.get("x") is not x.data:
            kernel.set_arg(1, x.data)
            kept["x"] = x.data
        kernel.set_arg(2, np.int32(x.size))
        fast_launch.launch(dev.queue, kernel, (x.size,), None, (0, 1), (out.data, x.data))
        kept["calls"] = kept.get("calls", 0) + 1
        return out

    got, want, fast = _compiled_negations(monkeypatch, neg)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert fast.launched.count("neg") == 1 and "matmul" in fast.launched
    assert kept["calls"] <= 3  # the recording, the trace, a check: not the 5 steps


def test_an_enqueue_around_the_one_launch_stays_a_hook_call(ocl, monkeypatch):
    import pyopencl as cl
    from fastnn_opencl.runtime import CLArray

    def neg(x):
        dev = x.dev
        kernel = _negate_kernel(dev)
        out = CLArray(dev.pool.allocate(x.size * 4), x.shape, x.strides, 0, x.dtype, dev)
        kernel.set_args(out.data, x.data, np.int32(x.size))
        cl.enqueue_nd_range_kernel(dev.queue, kernel, (x.size,), None)
        return out

    got, want, fast = _compiled_negations(monkeypatch, neg)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert "neg" not in fast.launched and "matmul" in fast.launched  # neg: a hook call


def test_only_the_one_launch_function_enqueues_directly():
    # a fast path must launch through fast_launch.launch (which the trace sees): no other
    # module of the backend may hold pyopencl's enqueue of kernels
    root = Path(__file__).resolve().parents[3] / "backends" / "opencl" / "fastnn_opencl"
    allowed = {"fast_launch.py", "launch_code.py", "launch_list.py"}
    users = sorted(p.name for p in root.glob("*.py")
                   if "enqueue_nd_range_kernel" in p.read_text() and p.name not in allowed)
    assert users == [], f"launch through fastnn_opencl.fast_launch.launch in {users}"


@pytest.mark.parametrize("dtype, n", [("float32", 8), ("float32", 3), ("bool", 5)])
def test_copies_between_buffers_replay_as_launches(ocl, dtype, n):
    # cat copies each part with enqueue_copy: 16-, 4- and 1-byte-wide copy kernels
    rng = np.random.default_rng(6)

    def make():
        data = rng.standard_normal((2, n)) > 0 if dtype == "bool" else \
            rng.standard_normal((2, n)).astype(dtype)
        return fnn.tensor(data, device=DEV)

    step = fnn.compile(lambda a, b: fnn.cat([a, b, a], 1))
    for _ in range(4):
        a, b = make(), make()
        want = np.concatenate([a.numpy(), b.numpy(), a.numpy()], 1)
        assert np.array_equal(step(a, b).numpy(), want)
    fast = step._last.program.runner().__self__.fast
    assert fast.launched.count("cat") >= 3 and "= f" not in fast.source
