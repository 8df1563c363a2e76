"""fnn.compile and the ops that read values back to Python: a read that only validates
(integer division's zero divisor, Gaussian NLL's variances) is checked at the recording
with eager's error and the step is one program; an op whose result depends on the values
read (argwhere's shape) is refused naming the line, or is a graph break with
fullgraph=False, equal to eager. clip_grad_norm_ reads nothing back, so a step that clips
compiles whole."""

import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F


def _ints(values):
    return fnn.tensor(np.array(values, dtype=np.int64))


def test_floor_divide_compiles_whole_and_equals_eager():
    step = fnn.compile(lambda a, b: (a // b) * 3 + a)  # fullgraph: no break allowed
    rng = np.random.default_rng(0)
    for _ in range(4):
        a = rng.integers(-50, 50, 7)
        b = rng.integers(1, 9, 7) * rng.choice([-1, 1], 7)
        got = step(_ints(a), _ints(b)).numpy()
        assert np.array_equal(got, (a // b) * 3 + a)  # NumPy's floor division, exactly
    assert step.stats == {"recorded": 1, "replayed": 3, "eager": 0}
    assert "floor_divide" in step.program()


def test_floor_divide_by_zero_raises_eager_s_error_when_recorded():
    with pytest.raises(ZeroDivisionError) as eager:
        _ints([4, 5]) // _ints([2, 0])
    step = fnn.compile(lambda a, b: a // b)
    with pytest.raises(ZeroDivisionError) as compiled:
        step(_ints([4, 5]), _ints([2, 0]))
    assert str(compiled.value) == str(eager.value) == \
        "floor_divide: integer division by zero (the divisor holds a 0)"


def _nll(x, y, var):
    return F.gaussian_nll_loss(x, y, var)


def test_gaussian_nll_loss_compiles_whole_and_equals_eager():
    rng = np.random.default_rng(1)
    step = fnn.compile(_nll)
    for _ in range(3):
        x, y = rng.standard_normal((2, 5, 3))
        var = rng.uniform(0.1, 2.0, (5, 3))
        args = [fnn.tensor(v) for v in (x, y, var)]
        got, want = step(*args).numpy(), _nll(*args).numpy()
        assert np.array_equal(got, want)
        # the loss as written out (float64): 0.5 (log var + (x - y)^2 / var), mean
        assert np.isclose(got, np.mean(0.5 * (np.log(var) + (x - y) ** 2 / var)))
    assert step.stats["recorded"] == 1 and step.stats["eager"] == 0


def test_gaussian_nll_loss_negative_variance_raises_eager_s_error_when_recorded():
    args = [fnn.tensor(v) for v in (np.zeros(3), np.ones(3), np.array([1.0, -1.0, 1.0]))]
    with pytest.raises(ValueError) as eager:
        _nll(*args)
    with pytest.raises(ValueError) as compiled:
        fnn.compile(_nll)(*args)
    assert str(compiled.value) == str(eager.value) == \
        "gaussian_nll_loss: var has negative entry/entries"


def _where_positive(x):
    return fnn.argwhere(x > 0) * 2  # the result's shape depends on x's values


def test_argwhere_is_refused_naming_the_line_with_fullgraph():
    step = fnn.compile(_where_positive)
    with pytest.raises(fnn.CaptureError) as info:
        step(fnn.tensor(np.array([1.0, -2.0, 3.0])))
    message = str(info.value)
    assert "test_compile_reads.py" in message and "fnn.argwhere(x > 0)" in message
    assert "reads a tensor's value back to Python" in message and "fullgraph=False" in message


def test_argwhere_is_a_graph_break_equal_to_eager_without_fullgraph():
    step = fnn.compile(_where_positive, fullgraph=False)
    rng = np.random.default_rng(2)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for n in range(5):
            x = rng.standard_normal((3, 4)) if n < 3 else np.array([[1.0, -1.0]])
            got = step(fnn.tensor(x)).numpy()
            want = _where_positive(fnn.tensor(x)).numpy()
            assert np.array_equal(got, want)
            assert np.array_equal(got, np.argwhere(x > 0) * 2)  # NumPy's, exactly
    breaks = [str(w.message) for w in said if "graph break" in str(w.message)]
    assert len(breaks) == 1 and "fnn.argwhere(x > 0)" in breaks[0]  # said once per line


def test_a_step_that_clips_its_gradients_is_captured_and_replayed():
    # clip_grad_norm_ keeps the norm and its coefficient on the device, as PyTorch's: a
    # step that clips reads nothing back, so it compiles, and replays as eager computes it
    def make():
        fnn.manual_seed(0)
        model = fnn.nn.Sequential(fnn.nn.Linear(4, 8), fnn.nn.ReLU(), fnn.nn.Linear(8, 2))
        return model, fnn.optim.SGD(model.parameters(), lr=0.1)

    def step(model, opt, x):
        opt.zero_grad()
        (model(x) ** 2).sum().backward()
        norm = fnn.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return norm

    eager, compiled = make(), make()
    run = fnn.compile(lambda x: step(*compiled, x))
    data = np.random.default_rng(1)
    for _ in range(5):
        x = fnn.tensor(data.normal(size=(3, 4)).astype(np.float32))
        want, got = step(*eager, x), run(x)
        assert float(want) > 0.5  # clipped, every step
        assert np.array_equal(got.numpy(), want.numpy())
    assert run.stats["replayed"] == 3
    for a, b in zip(eager[0].parameters(), compiled[0].parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())

