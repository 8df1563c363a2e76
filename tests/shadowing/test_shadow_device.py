"""Shadowing a device backend (opencl; cuda where a GPU is): checks in batches, blame as
precise as at once."""

from __future__ import annotations

import gc
import sys
import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.shadowing import batch, blame, calls, record
from fastnn.shadowing import session as session_module
from tests.shadowing import faulty
from tests.source_lines import line_in

pytestmark = pytest.mark.usefixtures("device_base")

HERE = __file__.rstrip("c")


def line_of(marker: str) -> int:
    return line_in(HERE, marker)


def test_a_wrong_kernel_is_blamed_at_its_own_line_though_checked_later(device_base, tmp_path):
    name = faulty.install(tmp_path, "exp", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        y = (x * 2).relu()
        z = y.exp()  # exp line
        w = (z + 1).sum()
        w.item()  # a sync point: the pending checks run here
    err = caught.value
    assert err.op == "exp" and err.source[:2] == (HERE, line_of("exp line"))
    assert err.max_rel == pytest.approx(0.01, rel=1e-3) and err.producers[0][1] == "relu"
    assert err.backend == name and err.reference == "cpu"


def test_of_two_wrong_calls_checked_together_the_first_one_is_blamed(device_base, tmp_path):
    """A batch's references run grouped by hook (exp's before sqrt's) and what fails is
    judged in call order: the wrong sqrt, called first, is blamed, not the wrong exp."""
    name = faulty.install(tmp_path, "sqrt_exp", base=device_base)
    x = fnn.tensor(np.linspace(0.5, 2, 12, dtype=np.float32), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        y = (x * 2).sqrt()  # first wrong call
        z = y.exp()
        z.sum().item()
    err = caught.value
    assert err.op == "sqrt" and err.source[:2] == (HERE, line_of("first wrong call"))
    assert err.max_rel == pytest.approx(0.01, rel=1e-3)


def _read_hook(session) -> str:
    """The hook shadow mode read batches with: to_numpy_views where the backend has it."""
    return "to_numpy_views" if "to_numpy_views" in session._read_with.values() else \
        "to_numpy_many"


def test_a_broken_to_numpy_many_is_named_and_blames_no_op(device_base, tmp_path):
    name = faulty.install(tmp_path, "to_numpy_many", base=device_base)
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Activation("tanh"), nn.Linear(8, 2)).to(name)
    x = fnn.tensor(np.ones((3, 4), np.float32), device=name)
    with pytest.warns(fnn.ShadowWarning, match="to_numpy_(many|views) returned other values"), \
            fnn.shadow("cpu") as session:
        model(x).sum().backward()
    rows = session.report().rows
    assert [r["op"] for r in rows if r["mismatches"]] == [_read_hook(session)], rows
    assert session._many is False and sum(r["checked"] for r in rows) > 10


@pytest.mark.parametrize("many", [True, False], ids=["read together", "one by one"])
def test_the_healthy_clone_passes_batches_of_every_size(device_base, tmp_path, monkeypatch, many):
    name = faulty.install(tmp_path, "healthy", base=device_base)
    monkeypatch.setattr(batch, "BATCH", 3)
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Activation("gelu"), nn.Linear(8, 2)).to(name)
    opt = fnn.optim.Adam(model.parameters(), lr=0.1)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with fnn.shadow("cpu") as session:
        session._many = many
        for _ in range(2):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    report = session.report()
    assert report.mismatches == 0 and sum(r["checked"] for r in report.rows) > 40, report


def test_a_broken_to_numpy_many_seen_first_at_a_read_blames_no_op(device_base, tmp_path):
    """A to_numpy's check compares its result with the batch's read: when only the read
    (to_numpy_many) is wrong, the read is named and the to_numpy is not blamed."""
    name = faulty.install(tmp_path, "to_numpy_many", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with pytest.warns(fnn.ShadowWarning, match="to_numpy_(many|views) returned other values"), \
            fnn.shadow("cpu") as session:
        got = (x * 2).numpy()
    np.testing.assert_array_equal(got, np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) * 2)
    rows = session.report().rows
    assert [r["op"] for r in rows if r["mismatches"]] == [_read_hook(session)], rows
    assert session._many is False


def test_checks_pending_at_the_last_sync_point_run_at_the_exit(device_base, tmp_path):
    """A to_numpy reads nothing for the checks: they (its own too) wait for the next
    batch; with no call after it, the end of the block runs them, and blames the call's
    own line."""
    name = faulty.install(tmp_path, "exp", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu") as session:
        y = x.exp()  # lagging exp
        y.numpy()
        assert len(session._pending) == 2  # exp and to_numpy: not read, not checked
    assert caught.value.op == "exp"
    assert caught.value.source[:2] == (HERE, line_of("lagging exp"))


def test_a_to_numpy_result_changed_by_its_caller_is_not_blamed(device_base, tmp_path):
    """A to_numpy's check waits for the next batch with a copy of its result: the caller
    owns the array and may write it meanwhile."""
    name = faulty.install(tmp_path, "healthy", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32), device=name)
    with fnn.shadow("cpu") as session:
        got = (x * 2).numpy()
        got += 100.0  # the caller's own array
    rows = session.report().rows
    assert session.report().mismatches == 0
    assert [r["checked"] for r in rows if r["op"] == "to_numpy"] == [1], rows


def test_a_to_numpy_reads_the_batch_only_when_many_calls_wait(device_base, tmp_path, monkeypatch):
    """A to_numpy reads the pending calls with it once READ_AT_SYNC of them wait (an
    evaluation loop's outputs are not held for many iterations), not before; a wrong
    call read there is still blamed at its own line."""
    monkeypatch.setattr(batch, "READ_AT_SYNC", 4)
    name = faulty.install(tmp_path, "exp", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu") as session:
        (x * 2).numpy()
        assert len(session._pending) == 2  # mul, to_numpy: under 4, nothing read
        y = (x + 1).exp()  # read exp
        y.numpy()
        assert not session._pending  # all read, to be checked (lagging, or on a worker)
        assert session._lagging == 5 or session._worker is not None
    assert caught.value.op == "exp" and caught.value.source[1] == line_of("read exp")


def _counts_around_a_second_run(run, held) -> tuple:
    """The reference counts of ``held`` after a first ``run()`` (what a first session loads
    and keeps: the tolerances, the code kinds) and after a second one."""
    def references():  # (the last session, kept for shadow_report(), let go first)
        session_module._last.clear()
        gc.collect()
        return [sys.getrefcount(v) for v in held]

    run()
    before = references()
    run()
    return before, references()


def test_the_c_wrapper_passes_keywords_errors_and_pauses_on(device_base, tmp_path):
    """record.c's wrapper sends a call with keywords to the Python wrapper, lets the hook's
    own error through (the call numbered, as in Python), runs the bare hook while
    shadowing is paused, and holds no reference once the session has ended."""
    if record.recorder_function() is None:  # (the fixture's Python run, or not built)
        pytest.skip("the C wrapper's own behaviour")
    name = faulty.install(tmp_path, "healthy", base=device_base)
    dev = fnn.Device(name)
    x = dev.ops.from_numpy(np.linspace(-1, 1, 6, dtype=np.float32), dev.index)
    hook = dev.ops.exp

    def run():
        with fnn.shadow("cpu") as session:
            wrapper = dev.ops.exp
            assert type(wrapper).__name__ == "Recorder"
            assert wrapper.__wrapped__ is hook and wrapper.__name__ == "exp"
            for _ in range(200):
                wrapper(x)
            wrapper(x=x)
            first = session._calls
            with pytest.raises(TypeError):
                wrapper()
            assert session._calls == first + 1
            session._on = False
            np.testing.assert_allclose(dev.ops.to_numpy(wrapper(x)),
                                       np.exp(dev.ops.to_numpy(x)), rtol=1e-6)
            session._on = True
        rows = {r["op"]: r for r in session.report().rows}
        assert rows["exp"]["checked"] == 201 and session.report().mismatches == 0

    held = (x, hook, "exp", calls.SPECS["exp"], True, False)
    before, after = _counts_around_a_second_run(run, held)
    # (a reference kept per call would add 200; a cache elsewhere may take or drop a few of
    # a shared constant: "exp", True and False are held all over the process, and in a full
    # run their counts moved by more than 2 between the two reads)
    assert after[:2] == before[:2] and all(abs(a - b) <= 20 for a, b in zip(after, before))


def _adam_steps(name, steps: int):
    """``steps`` Adam steps of a small model on ``name``; the line of the update is
    marked ``device step line``."""
    fnn.manual_seed(0)
    with fnn.use(name):
        model = nn.Sequential(nn.Linear(6, 8), nn.Activation("tanh"), nn.Linear(8, 3))
        opt = fnn.optim.Adam(model.parameters(), lr=0.05)
        x = fnn.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
        y = fnn.tensor(np.array([0, 2, 1, 2]))
    for _ in range(steps):
        loss = fnn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()  # device step line
    return model


def test_an_optimizer_update_is_checked_once_and_a_wrong_one_named(device_base, tmp_path):
    """A device's fused update is checked against one run of the reference's, which
    updates the host copies read before it ran (a second run would update them twice);
    a wrong update is named at the step's line, with the fault's error, not the update's."""
    name = faulty.install(tmp_path, "healthy", base=device_base)
    with fnn.shadow("cpu") as session:
        runs = []
        real = session._ref_ops.adam_step

        def counted(*args):
            runs.append(args[9])  # (the step number)
            return real(*args)

        session._ref_ops.adam_step = counted
        try:
            _adam_steps(name, 3)
            session.report()  # (the last update's check runs here)
        finally:
            session._ref_ops.adam_step = real
    assert runs == [1, 2, 3] and session.report().mismatches == 0
    bad = faulty.install(tmp_path, "adam_step", base=device_base)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        _adam_steps(bad, 1)
    err = caught.value
    assert err.op == "adam_step" and err.source[:2] == (HERE, line_of("device step line"))
    assert err.output.startswith("[0]") and err.max_abs < 0.05


def test_checking_a_training_step_in_c_holds_no_references(device_base, tmp_path):
    """settle.c's checks of a step's calls (several outputs, an update's host copies, a
    device index) and record.c's wrapper leave no reference behind: the objects they
    touch at every call have the same counts after a second session of steps."""
    name = faulty.install(tmp_path, "healthy", base=device_base)
    hooks = ("adam_step", "bias_act_backward", "softmax_cross_entropy", "full", "matmul")
    held = [calls.SPECS[h] for h in hooks] + list(hooks) + [True, False, None]

    def run():
        with fnn.shadow("cpu") as session:
            _adam_steps(name, 4)
        assert session.report().mismatches == 0

    before, after = _counts_around_a_second_run(run, held)
    # a reference kept per call would add one a call (4 steps of several products and
    # fused gradients); a cache elsewhere may take or drop one of a name (CI saw -1)
    assert all(abs(a - b) <= 2 for a, b in zip(after[:-1], before[:-1])), (before, after)
    assert abs(after[-1] - before[-1]) < 50  # (None: counted by everything else too)


def test_the_c_wrapper_sets_every_field_of_a_pending_call():
    """record.c fills a Pending through the slots record.FIELDS names, without its
    __init__: a slot added to Pending or Place must be named there too."""
    slots = set(batch.Pending.__slots__) | set(batch.blame.Place.__slots__)
    assert set(record.FIELDS) == slots and len(record.FIELDS) == len(slots)


def test_each_output_is_noted_with_the_call_that_made_it(device_base, tmp_path):
    """The producers table, filled by either wrapper: each array made is found with its
    call and hook; device arrays without weak references (none of fastnn's backends
    now) would be held, so that their ids stay theirs; a full table is emptied before
    the next entry."""

    name = faulty.install(tmp_path, "healthy", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with fnn.shadow("cpu") as session:
        first = session._calls
        y = x * 2
        z = y.relu()
        table = session._producers
        assert table.of(y._data) == (first, "mul") and table.of(z._data) == (first + 1, "relu")
        assert table.of(x._data) is None  # (made before shadowing)
        kind = type(z._data)
        held = table._table[id(z._data)][0]
        assert held is z._data if kind in blame._STRONG else held() is z._data
        table.limit = len(table._table)
        w = z + 1
        assert list(table._table) == [id(w._data)] and table.of(w._data)[1] == "add"
        z.sum().item()
    assert fnn.shadow_report().mismatches == 0


def test_the_producers_table_keeps_no_device_array_alive(device_base, tmp_path):
    """Device arrays are weakly referable (opencl's CLArray as CuPy's arrays): the table
    of which call made each array holds them weakly, so a loop with no optimizer step
    (an evaluation, where the table is not renewed) frees what it no longer uses."""
    import weakref

    name = faulty.install(tmp_path, "healthy", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=name)
    with fnn.shadow("cpu") as session:
        made = []
        for _ in range(20):
            y = x * 2
            made.append(weakref.ref(y._data))
            y.sum().item()
        del y
        session.report()  # (the checks still waiting hold their calls' arrays)
        session._copies.clear()  # (and the last batch's host copies, until the next read)
        gc.collect()
        assert type(x._data) not in blame._STRONG and len(session._producers._table) >= 20
        assert [ref() for ref in made] == [None] * len(made)
        kept = weakref.ref((x * 3)._data)  # (its check runs at the block's end)
    gc.collect()
    assert kept() is None  # (the ended session holds none of its arrays)
    assert fnn.shadow_report().mismatches == 0


def _long_script(path, backend: str, at: int) -> int:
    """A script run at module level whose wrong exp is on line ``at``; returns that line."""
    lines = [f"filler_{i} = {i}" for i in range(at - 4)]
    lines += ["import numpy as np", "import fastnn as fnn",
              f"x = fnn.tensor(np.linspace(-1, 1, 6, dtype=np.float32), device={backend!r})",
              "y = x.exp()  # the wrong exp", "y.sum().item()"]
    path.write_text("\n".join(lines) + "\n")
    return at


def test_a_call_far_down_a_long_script_is_named_at_its_line(device_base, tmp_path):
    """The user's line is kept as the instruction's offset and made a line only for a
    mismatch: right at line 1500 of a script run at module level, where f_lineno at each
    call would have scanned the line table from its start."""
    name = faulty.install(tmp_path, "exp", base=device_base)
    script = tmp_path / "long_script.py"
    line = _long_script(script, name, 1500)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        exec(compile(script.read_text(), str(script), "exec"), {"__name__": "long_script"})
    err = caught.value
    assert err.op == "exp" and err.source[:2] == (str(script), line)
    assert err.source[3] == "y = x.exp()  # the wrong exp"


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_array_arguments_that_may_be_none_reach_the_reference_on_the_host(device_base,
                                                                           reduction):
    """A causal attention's mask and the ignore_index loss's count of rows kept are arrays
    or None (``Array | None`` in the spec): both are read and uploaded to the reference, so
    their calls are checked, not counted with a warning that the reference could not run
    them (as they were when the mask passed as a plain value)."""
    rng = np.random.default_rng(0)
    q = fnn.tensor(rng.standard_normal((2, 3, 5, 4)).astype(np.float32), device=device_base,
                   requires_grad=True)
    logits = fnn.tensor(rng.standard_normal((6, 4)).astype(np.float32), device=device_base,
                        requires_grad=True)
    targets = fnn.tensor(np.array([1, -100, 2, 0, -100, 3]), device=device_base)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fnn.ShadowWarning)
        with fnn.shadow("cpu") as session:
            out = fnn.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
            loss = fnn.nn.functional.cross_entropy(logits, targets, reduction=reduction)
            (out.sum() + loss.sum()).backward()
            rows = {row["op"]: row for row in session.report().rows}
    for hook in ("attention", "attention_backward", "cross_entropy_loss",
                 "cross_entropy_loss_backward"):
        assert rows[hook]["checked"] == rows[hook]["calls"] == 1, rows[hook]

