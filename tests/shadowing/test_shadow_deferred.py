"""Deferred checks on a device backend: a mismatch found calls later (at an optimizer
step, a sync, the end of the block) still blames its own op, line and place in the step;
a host copy kept for later calls goes when a hook writes in place; the batch's outputs
compared at once agree with the one-by-one comparison."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.shadowing import batch, blame, diff, vector
from tests.shadowing import faulty
from tests.source_lines import line_in

pytestmark = pytest.mark.usefixtures("device_base")

HERE = __file__.rstrip("c")


def line_of(marker: str) -> int:
    return line_in(HERE, marker)


def test_a_mismatch_checked_at_the_optimizer_step_blames_its_own_line(device_base, tmp_path):
    name = faulty.install(tmp_path, "exp", base=device_base)
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Activation("tanh"), nn.Linear(8, 3)).to(name)
    opt = fnn.optim.Adam(model.parameters(), lr=1e-2)
    x = fnn.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4), device=name)
    starts = []  # the first call of each step (after the update that closed the last)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu") as session:
        for step in range(2):
            starts.append(session._step_start)
            h = model(x)
            if step == 1:
                h = h.exp()  # deferred exp
            loss = h.square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()  # the batch is read here, and checked while the update runs
    err = caught.value
    assert err.op == "exp" and err.source[:2] == (HERE, line_of("deferred exp"))
    # the step's first call follows the fused update that closed step 0
    assert err.step == 1 and err.op_in_step == err.call - starts[1] > 0
    assert err.producers[0] is not None and err.producers[0][1] == "bias_act"
    # raised later than the call: from the optimizer's step, not from the exp line
    frames = [f.lineno for f in inspect.getinnerframes(caught.tb) if f.filename == HERE]
    assert line_of("deferred exp") not in frames


def test_a_mismatch_pending_at_the_end_of_the_block_is_raised_by_its_exit(device_base, tmp_path):
    name = faulty.install(tmp_path, "exp", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 6, dtype=np.float32), device=name)
    session = fnn.shadow("cpu")
    with pytest.raises(fnn.ShadowMismatch) as caught:
        with session:
            (x + 1).exp()  # last exp
            assert session._pending, "the check waits: nothing syncs inside the block"
    assert caught.value.op == "exp" and caught.value.source[1] == line_of("last exp")
    assert not session._pending


@pytest.mark.parametrize("stale", [False, True], ids=["invalidated", "stale (control)"])
def test_an_in_place_write_drops_the_cached_host_copy(device_base, tmp_path, monkeypatch, stale):
    name = faulty.install(tmp_path, "exp_memo", base=device_base)
    if stale:  # what a cache that outlived in-place writes would do: the fault is hidden
        monkeypatch.setattr(blame.HostCopies, "clear", lambda self: None)
    a = fnn.tensor(np.linspace(-1, 1, 8, dtype=np.float32), device=name)
    # only exp is checked: the in-place write (assign) is not run on the reference, so
    # nothing but dropping the cached copy keeps it from holding the old values
    with fnn.shadow("cpu", mode="record", ops=["exp"]) as session:
        if stale:  # read copies (a view of the device's memory is never stale)
            session._views = False
        a.exp()  # a's host copy is read for this check and kept for later calls
        a.add_(1.0)  # written in place on the device (assign)
        a.exp()  # second exp: the memo returns exp of the old values
    exp_rows = [r for r in session.report().rows if r["op"] == "exp"]
    assert exp_rows and exp_rows[0]["checked"] == 2
    assert exp_rows[0]["mismatches"] == (0 if stale else 1), exp_rows


def test_reads_the_device_will_write_are_checked_before_it_does(device_base, tmp_path):
    """A batch read with views of the device's memory (to_numpy_views, opencl on PoCL)
    whose arrays an in-place write then changes: its checks run before the write, so the
    healthy calls pass (after it, exp's input would read the new values and its output
    the old ones); where the reads are copies they lag as before."""
    name = faulty.install(tmp_path, "healthy", base=device_base)
    a = fnn.tensor(np.linspace(-1, 1, 8, dtype=np.float32), device=name)
    with fnn.shadow("cpu") as session:
        for _ in range(3):
            b = (a * 2).exp()
            a.add_(1.0)  # written in place on the device (assign), b's inputs read first
            a.mul_(b.sum() * 0 + 0.5)  # (a read of b's batch at the next write)
    report = session.report()
    assert report.mismatches == 0, report
    assert {r["op"]: r["checked"] for r in report.rows}["exp"] == 3


def test_a_mismatch_after_an_in_place_write_is_blamed_on_the_line_that_read_it(device_base,
                                                                               tmp_path):
    name = faulty.install(tmp_path, "exp_memo", base=device_base)
    a = fnn.tensor(np.linspace(-1, 1, 8, dtype=np.float32), device=name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        a.exp()
        a.add_(1.0)
        a.exp()  # stale exp
    assert caught.value.op == "exp" and caught.value.source[1] == line_of("stale exp")


def _pair(rng, dtype, shape, kind):
    want = rng.normal(size=shape).astype(dtype)
    got = want.copy()
    flat = got.reshape(-1)
    if kind == "close":
        got += (rng.normal(size=shape) * 1e-7).astype(dtype)
    elif kind == "off":
        flat[rng.integers(flat.size)] += 1.0
    elif kind == "nan":
        flat[0] = np.nan
    elif kind == "inf":
        flat[-1] = np.inf
    elif kind == "same nan":
        flat[0] = want.reshape(-1)[0] = np.nan
    return got, want


def test_outputs_compared_at_once_agree_with_one_by_one():
    rng = np.random.default_rng(0)
    kinds = ["equal", "close", "off", "nan", "inf", "same nan"]
    items = []
    for i in range(60):
        dtype = (np.float32, np.float64)[i % 2]
        shape = [(3, 5), (7,), (2, 3, 4), (1,), (40, 30)][i % 5]
        got, want = _pair(rng, dtype, shape, kinds[i % len(kinds)])
        if i % 7 == 3:
            got, want = got.T, want.T  # views: compared in their logical order
        rtol, atol = [(2e-5, 2e-6), (0.0, 1e-3), (1e-2, 1e-12)][i % 3]
        items.append((got, want, rtol, atol))
    assert all(vector.eligible(g, w) for g, w, _, _ in items)
    verdicts = vector.compare_many(items)
    for (got, want, rtol, atol), verdict in zip(items, verdicts):
        one = diff.compare(got, want, rtol, atol, equal_first=False)
        if one.failed:  # (a misplaced NaN or Inf too)
            assert verdict is None, (one, verdict)
        else:  # (a NaN where the reference has one passes, as one by one)
            assert verdict is not None, one
            assert verdict[0] == pytest.approx(one.max_abs, rel=1e-6, abs=1e-30)
            assert verdict[1] == pytest.approx(one.ratio, rel=1e-5, abs=1e-30)
    assert sum(v is None for v in verdicts) == 30  # the failing kinds were all caught
    assert not vector.eligible(np.zeros(3, np.int32), np.zeros(3, np.int32))
    assert not vector.eligible(np.zeros(3, np.float32), np.zeros(3, np.float64))


def test_outputs_tried_for_equality_at_once_agree_with_one_by_one():
    """Small outputs are tried bit for bit all at once; the batch is equal exactly when
    each of its pairs compares EQUAL one by one (a differing pair anywhere, a transposed
    view, -0.0 against 0.0 and NaN of other bits are not equal bit for bit)."""
    rng = np.random.default_rng(2)
    pairs = []
    for i in range(40):
        dtype = (np.float32, np.float64, np.int64, np.bool_)[i % 4]
        want = (rng.normal(size=(3, 4)) * 5).astype(dtype)
        pairs.append((want.copy().T if i % 5 == 0 else want.copy(), want.T if i % 5 == 0
                      else want))
    nan = np.array([np.nan, 1.0], np.float32)
    pairs.append((nan.copy(), nan))  # the same NaN bits: equal
    assert all(vector.small_pair(g, w) for g, w in pairs)
    assert vector.all_equal(pairs)
    assert all(diff.compare(g, w, 0.0, 1e-30) is diff.EQUAL for g, w in pairs)
    for k, change in [(5, "value"), (4, "negative zero"), (40, "nan bits")]:
        got, want = pairs[k][0].copy(), pairs[k][1]
        if change == "value":
            got.flat[5] += 1
        elif change == "negative zero":
            got.flat[2], want = -0.0, want.copy()
            want.flat[2] = 0.0
        else:
            got[0] = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)[0]
        changed = pairs[:k] + [(got, want)] + pairs[k + 1:]
        assert not vector.all_equal(changed), change
        assert diff.compare(got, want, 0.0, 1e-30).failed == (change == "value")
    assert not vector.small_pair(np.zeros(3, np.float32), np.zeros(3, np.float64))
    assert not vector.small_pair(np.zeros((3, 1)), np.zeros(3))
    assert not vector.small_pair(np.zeros(1 << 12), np.zeros(1 << 12))  # 32 KiB: alone
    one_off = pairs[:1] + [(pairs[1][0] + 1, pairs[1][1])] + pairs[2:]
    assert vector.equal_each(one_off) == [i != 1 for i in range(len(pairs))]
    assert vector.equal_each(pairs) == [True] * len(pairs)


def test_the_host_copies_kept_are_one_batchs(device_base, tmp_path, monkeypatch):
    """A loop with no in-place hook keeps the host copies (and holds the device arrays)
    of the last batch read only, not of every batch since the last in-place write."""
    monkeypatch.setattr(batch, "BATCH", 8)
    name = faulty.install(tmp_path, "healthy", base=device_base)
    x = fnn.tensor(np.linspace(-1, 1, 6, dtype=np.float32), device=name)
    with fnn.shadow("cpu") as session:
        for _ in range(40):
            (x * 2).exp()
        held = len(session._copies.hosts)
    assert 0 < held <= 2 * 8 + 1, held  # a batch's inputs and outputs
    assert session.report().mismatches == 0
