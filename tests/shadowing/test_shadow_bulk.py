"""A batch's outputs judged in bulk (:class:`fastnn.shadowing.vector.Bulk`: in bulk.c's
one call, in close.c and in NumPy's passes) against the one-by-one comparison
(:func:`fastnn.shadowing.diff.compare`): bulk never passes an output that fails one by
one, gives a passing output the same errors, and leaves only the failing ones (and those
of a kind it does not judge) to the one-by-one diagnosis."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.api.device import as_device
from fastnn.shadowing import diff, vector
from tests.shadowing import faulty

KINDS = ("equal", "close", "planted", "same nan", "misplaced nan", "same inf",
         "opposite inf", "inf for finite", "negative zero", "overflow")
TOLERANCES = [(2e-5, 2e-6), (0.0, 1e-3), (2e-4, 2e-5), (1e-2, 1e-12), (0.0, 0.0)]


# every test twice: with shadow mode's C comparison and with NumPy's passes (conftest.py)
pytestmark = pytest.mark.usefixtures("path")


def _output(rng, dtype, shape, kind, at):
    """(got, want) of ``kind``, its change (if any) at flat element ``at``."""
    want = np.array(rng.normal(size=shape) * 3, dtype)
    got = want.copy()
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    if not flat_got.size or kind == "equal":
        return got, want
    floats = np.dtype(dtype).kind == "f"
    if kind == "close" and floats:
        got += (want * 1e-6).astype(dtype)
    elif kind == "planted" or not floats:
        flat_got[at] = flat_got[at] + 1 if np.dtype(dtype) != np.bool_ else not flat_got[at]
    elif kind == "same nan":
        flat_got[at] = flat_want[at] = np.nan
    elif kind == "misplaced nan":
        flat_got[at] = np.nan
    elif kind == "same inf":
        flat_got[at] = flat_want[at] = -np.inf
    elif kind == "opposite inf":
        flat_got[at], flat_want[at] = np.inf, -np.inf
    elif kind == "inf for finite":
        flat_got[at] = np.inf
    elif kind == "negative zero":
        flat_got[at], flat_want[at] = -0.0, 0.0
    elif kind == "overflow":
        top = np.finfo(dtype).max
        flat_got[at], flat_want[at] = top, -top
    return got, want


def _batch(seed: int, size: int = 60) -> list:
    rng = np.random.default_rng(seed)
    dtypes = (np.float32, np.float64, np.int64, np.bool_, np.float16)
    shapes = [(), (0,), (1,), (7,), (3, 5), (2, 3, 4), (40, 30), (60, 50), (200, 300)]
    items = []
    for _ in range(size):
        dtype = dtypes[rng.integers(len(dtypes))]
        shape = shapes[rng.integers(len(shapes))]
        kind = KINDS[rng.integers(len(KINDS))]
        at = int(rng.integers(max(int(np.prod(shape)), 1)))
        got, want = _output(rng, dtype, shape, kind, at)
        if len(shape) == 2 and rng.random() < 0.3:
            got, want = got.T, want.T  # views: compared in their logical order
        rtol, atol = TOLERANCES[rng.integers(len(TOLERANCES))]
        if np.dtype(dtype).kind != "f":
            rtol, atol = 0.0, 0.0
        else:
            atol = max(atol, 16 * float(np.finfo(np.float32).tiny))  # floored, as tolerance
        known = float(rng.choice([0.0, 0.5, 2.0]))
        items.append((got, want, rtol, atol, known, bool(rng.random() < 0.5)))
    return items


def _judged_in_bulk(got, want) -> bool:
    """Whether Bulk gives this output a verdict when it passes (else it is left to the
    one-by-one comparison): small, and equal bit for bit or of float32 or float64 (an
    output tried for equality first and not equal is then compared as floats)."""
    if got.size >= vector.ALONE_FROM:
        return False
    return got.tobytes() == want.tobytes() or got.dtype in (np.float32, np.float64)


@pytest.mark.parametrize("seed", range(6))
def test_bulk_verdicts_agree_with_one_by_one_on_random_batches(seed):
    items = _batch(seed)
    bulk = vector.Bulk()
    indices = [bulk.add(*item) for item in items]
    assert indices == list(range(len(items)))
    verdicts = bulk.verdicts()
    passed = 0
    for (got, want, rtol, atol, known, _), verdict in zip(items, verdicts):
        one = diff.compare(got, want, rtol, atol, equal_first=False)
        if one.failed:
            assert verdict is None, (got, want, one, verdict)  # never passed in bulk
            continue
        if verdict is None:  # only where bulk does not judge this kind of output
            assert not _judged_in_bulk(got, want), (got, want, one)
            continue
        passed += 1
        assert verdict[0] == pytest.approx(one.max_abs, rel=1e-6, abs=1e-30)
        # the exact ratio, or a bound under the row's worst (known) that stays above it
        assert verdict[1] >= one.ratio * (1 - 1e-5) - 1e-30
        assert verdict[1] <= max(one.ratio * (1 + 1e-5), known) + 1e-30
    assert passed > 10
    assert sum(v is None for v in verdicts) > 10


def test_a_planted_error_fails_only_its_own_output():
    """One element off in one output of a batch of many (laid end to end with it): only
    that output fails, whatever its neighbours' tolerances."""
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        wants = [rng.normal(size=n).astype(dtype) for n in (5, 1000, 1, 64, 300)]
        for bad in range(len(wants)):
            bulk = vector.Bulk()
            for k, want in enumerate(wants):
                got = want.copy()
                if k == bad:
                    got[-1] += 1e-2  # above atol + rtol * |want| for |want| < ~4.9
                    want[-1] = 0.5
                bulk.add(got, want, 1e-4, 1e-5 if k == bad else 1.0, 0.0, False)
            verdicts = bulk.verdicts()
            assert [v is None for v in verdicts] == [k == bad for k in range(len(wants))]


@pytest.mark.parametrize("size", [4, vector.DIRECT_FROM + 4])
def test_nan_and_inf_in_one_output_leave_the_others_exact(size):
    """A NaN or Inf in one output (where the reference has it) does not change the errors
    of the others laid end to end with it, nor its own finite errors (small outputs,
    copied end to end, and large ones, each subtracted into its stretch)."""
    want = np.resize(np.array([1.0, np.nan, -np.inf, 2.0], np.float32), size)
    got = np.resize(np.array([1.0 + 2e-6, np.nan, -np.inf, 2.0], np.float32), size)
    other = np.linspace(1, 2, 9 if size < vector.DIRECT_FROM else size, dtype=np.float32)
    bulk = vector.Bulk()
    bulk.add(got, want, 1e-5, 1e-6, 0.0, False)
    bulk.add(other + np.float32(1e-6), other, 1e-5, 1e-6, 0.0, False)
    first, second = bulk.verdicts()
    one = diff.compare(got, want, 1e-5, 1e-6, equal_first=False)
    assert not one.failed and first[0] == pytest.approx(one.max_abs)
    assert first[1] == pytest.approx(one.ratio, rel=1e-5)
    alone = vector.compare_many([(other + np.float32(1e-6), other, 1e-5, 1e-6)])[0]
    assert second == pytest.approx(alone)


def test_a_model_judged_in_bulk_reports_as_one_by_one(tmp_path, monkeypatch):
    """The same training steps, shadowed with the batches judged in bulk and with every
    output left to the one-by-one comparison: the same rows, calls and mismatches, and
    the same worst errors (a planted 1% exp fault among healthy ops)."""
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    name = faulty.install(tmp_path, "exp", base="opencl")
    x = fnn.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4), device=name)

    def run():
        fnn.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Activation("tanh"), nn.Linear(8, 3)).to(name)
        opt = fnn.optim.Adam(model.parameters(), lr=1e-2)
        with fnn.shadow("cpu", mode="record") as session:
            for _ in range(3):
                loss = model(x).exp().square().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                loss.item()
        return session.report().rows

    bulk = run()
    monkeypatch.setattr(vector.Bulk, "verdicts", lambda self: [None] * self.count)
    if diff._bulk:  # nor bulk.c's check of the plain calls, which passes them without Bulk
        monkeypatch.setattr(diff, "_bulk", diff._bulk[:2] + [None] + diff._bulk[3:])
    alone = run()
    assert [(r["op"], r["dtype"], r["calls"], r["checked"], r["mismatches"]) for r in bulk] \
        == [(r["op"], r["dtype"], r["calls"], r["checked"], r["mismatches"]) for r in alone]
    assert [r["op"] for r in bulk if r["mismatches"]] == ["exp"]
    for b, a in zip(bulk, alone):
        assert b["max_abs"] == pytest.approx(a["max_abs"], rel=1e-6, abs=1e-30), (b, a)
        assert b["of_tolerance"] == pytest.approx(a["of_tolerance"], rel=1e-5), (b, a)


def test_an_output_in_the_reference_outputs_memory_is_equal_without_a_copy():
    """A view hook's output read with its input is the same memory as NumPy's view of
    that input: equal; a view of the same layout elsewhere in that memory is compared."""
    base = np.arange(4096, dtype=np.float32).reshape(64, 64)
    bulk = vector.Bulk()
    bulk.add(base.T, base.T, 0.0, 1e-30, 0.0, True)  # one memory, one layout
    shifted = np.arange(4097, dtype=np.float32)[1:].reshape(64, 64)
    bulk.add(shifted.T, base.T, 0.0, 1e-30, 0.0, True)  # one layout, off by an element
    bulk.add(base.T.copy(), base.T, 0.0, 1e-30, 0.0, True)  # equal values, other memory
    same, off, copied = bulk.verdicts()
    assert same == vector.EQUAL_VERDICT and copied == vector.EQUAL_VERDICT
    assert off is None and diff.compare(shifted.T, base.T, 0.0, 1e-30).failed
    if bulk._items is None:  # (bulk.c sees one memory in one test, with no list of them)
        assert bulk._same == [0]  # (the first only: nothing to copy)


def test_bulk_c_raises_on_a_bad_list_and_leaves_what_it_cannot_read_to_python():
    """bulk.c's one call runs holding the GIL: a malformed list raises TypeError (it never
    crashes the process), and an output that is no buffer, or of a dtype it does not
    judge and unequal, comes back as None for Python; one laid out unlike its pair is
    judged row by row."""
    fn = diff.bulk_function()
    if fn is None:
        pytest.skip(f"no C batch comparison here: {diff._bulk[1]}")
    a = np.linspace(0, 1, 50, dtype=np.float32)
    with pytest.raises(TypeError, match="expected a list"):
        fn((a, a, 0.0, 1e-6))
    with pytest.raises(TypeError, match="expected a list"):
        fn([a, a, 0.0])
    with pytest.raises(TypeError):
        fn([a, a, "rtol", 1e-6])
    x = np.arange(12.0).reshape(3, 4)
    found = fn([a, a + np.float32(1e-7), 1e-5, 1e-6,  # close: its errors
                3.0, 3.0, 0.0, 0.0,  # no buffer
                x.T, np.ascontiguousarray(x.T), 0.0, 1e-9,  # equal, laid out apart
                np.arange(4), np.arange(4) + 1, 0.0, 0.0,  # integers, unequal
                np.arange(4), np.arange(4), 0.0, 0.0,  # integers, equal
                a, a + 1, 1e-5, 1e-6])  # fails
    want = (a + np.float32(1e-7)).astype(np.float64)
    err = np.abs(a - want)
    assert found[0] == pytest.approx((err.max(), (err / (1e-6 + 1e-5 * np.abs(want))).max()),
                                     rel=1e-4)
    assert found[1] is None and found[2] == (0.0, 0.0) and found[3] is None
    assert found[4] == (0.0, 0.0) and found[5] is None


@pytest.mark.parametrize("layout", ["broadcast", "broadcast column", "transposed",
                                    "sliced", "reversed", "strided column"])
def test_bulk_c_judges_laid_out_alike_arrays_as_numpy(layout):
    """Pairs laid out alike (a broadcast's stride 0 included) get the errors NumPy finds
    over their elements, in memory order or row by row."""
    fn = diff.bulk_function()
    if fn is None:
        pytest.skip(f"no C batch comparison here: {diff._bulk[1]}")
    rng = np.random.default_rng(3)
    base = rng.normal(size=(6, 8)).astype(np.float32)
    other = base + rng.normal(size=(6, 8)).astype(np.float32) * 1e-7
    pick = {"broadcast": lambda a: np.broadcast_to(a[0], (5, 8)),
            "broadcast column": lambda a: np.broadcast_to(a[:, :1].copy(), (6, 7)),
            "transposed": lambda a: a.T,
            "sliced": lambda a: a[:, ::2],
            "reversed": lambda a: a[::-1],
            "strided column": lambda a: np.broadcast_to(a[:, :1], (6, 7))}[layout]
    got, want = pick(base), pick(other)
    found = fn([got, want, 1e-5, 1e-6])[0]
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    assert found == pytest.approx((err.max(), (err / (1e-6 + 1e-5 * np.abs(w))).max()),
                                  rel=1e-4)


def test_a_batched_call_the_reference_cannot_run_is_counted_and_an_interrupt_passes(
        tmp_path, monkeypatch):
    """A device's calls checked in a batch (bulk.c's settle where it built, Python's path
    else): a reference raising an Exception counts the call as unchecked and warns once;
    a KeyboardInterrupt raised by the reference is not swallowed."""
    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    name = faulty.install(tmp_path, "healthy", base="opencl")
    x = fnn.tensor(np.ones((2, 3), np.float32), device=name)
    cpu = as_device("cpu").ops
    refusal = [TypeError("no exp here")]

    def refuse(x):
        raise refusal[0]

    monkeypatch.setattr(cpu, "exp", refuse)
    with pytest.warns(fnn.ShadowWarning, match="cannot run exp.*TypeError: no exp here"), \
            fnn.shadow("cpu") as session:
        y = x.exp()
        x.exp().sum().item()
    np.testing.assert_allclose(y.numpy(), np.e, rtol=1e-6)
    rows = {r["op"]: r for r in session.report().rows}
    assert (rows["exp"]["calls"], rows["exp"]["checked"], rows["exp"]["mismatches"]) == (2, 0, 0)
    assert rows["sum"]["checked"] == 1
    refusal[0] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt), fnn.shadow("cpu"):
        x.exp().sum().item()
