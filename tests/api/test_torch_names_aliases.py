"""PyTorch's top-level spellings of comparisons and arithmetic (``fnn.gt``, ``fnn.divide``,
``fnn.clamp_min`` ...), the dtype questions (``finfo``, ``result_type`` ...) and
``inference_mode``: NumPy float64 references, and PyTorch's answers where installed."""

import numpy as np
import pytest

import fastnn as fnn
from tests.api.torch_names_check import check, torch

X = np.array([[1.5, -2.0, 0.0], [np.nan, 3.0, -0.5]])
Y = np.array([[1.5, 2.0, -1.0], [1.0, np.nan, 0.25]])

COMPARISONS = {"gt": np.greater, "lt": np.less, "ge": np.greater_equal, "le": np.less_equal,
               "eq": np.equal, "ne": np.not_equal, "greater": np.greater,
               "less": np.less, "greater_equal": np.greater_equal,
               "less_equal": np.less_equal, "not_equal": np.not_equal}


@pytest.mark.parametrize("name", sorted(COMPARISONS))
def test_comparisons_at_top_level_and_as_methods(name):
    want = COMPARISONS[name](X, Y)
    got = getattr(fnn, name)(fnn.tensor(X), fnn.tensor(Y))
    assert got.dtype == fnn.bool
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(getattr(fnn.tensor(X), name)(fnn.tensor(Y)).numpy(), want)
    np.testing.assert_array_equal(getattr(fnn, name)(fnn.tensor(X), 0.0).numpy(),
                                  COMPARISONS[name](X, 0.0))
    if torch is not None:
        theirs = getattr(torch, name)(torch.tensor(X), torch.tensor(Y))
        np.testing.assert_array_equal(got.numpy(), theirs.numpy())


ARITHMETIC = {
    "divide": (lambda a, b: fnn.divide(a, b), np.divide),
    "true_divide": (lambda a, b: fnn.true_divide(a, b), np.divide),
    "subtract": (lambda a, b: fnn.subtract(a, b, alpha=2), lambda a, b: a - 2 * b),
    "multiply": (lambda a, b: fnn.multiply(a, b), np.multiply),
    "rsub": (lambda a, b: fnn.rsub(a, b, alpha=3), lambda a, b: b - 3 * a),
    "negative": (lambda a, b: fnn.negative(a), lambda a, b: -a),
    "absolute": (lambda a, b: fnn.absolute(a), lambda a, b: np.abs(a)),
    "clamp_min": (lambda a, b: fnn.clamp_min(a, 0.5), lambda a, b: np.maximum(a, 0.5)),
    "clamp_max": (lambda a, b: fnn.clamp_max(a, 0.5), lambda a, b: np.minimum(a, 0.5)),
    "divide_floor": (lambda a, b: fnn.divide(a, b, rounding_mode="floor"),
                     lambda a, b: np.floor(a / b)),
}


@pytest.mark.parametrize("name", sorted(ARITHMETIC))
def test_arithmetic_aliases_values_and_gradients(name):
    run, reference = ARITHMETIC[name]
    a = np.array([[1.5, -2.0, 0.75], [4.0, 3.0, -0.5]])
    b = np.array([[0.5, 2.0, -1.0], [1.5, -4.0, 0.25]])
    check(run, reference, a, b, torch_run=lambda a, b: _torch_same(name, a, b))


def _torch_same(name, a, b):
    return {"divide": lambda: torch.divide(a, b), "true_divide": lambda: torch.true_divide(a, b),
            "subtract": lambda: torch.subtract(a, b, alpha=2),
            "multiply": lambda: torch.multiply(a, b), "rsub": lambda: torch.rsub(a, b, alpha=3),
            "negative": lambda: torch.negative(a), "absolute": lambda: torch.absolute(a),
            "clamp_min": lambda: torch.clamp_min(a, 0.5),
            "clamp_max": lambda: torch.clamp_max(a, 0.5),
            "divide_floor": lambda: torch.divide(a, b, rounding_mode="floor")}[name]()


@pytest.mark.parametrize("name", ["negative", "absolute", "clamp_min", "clamp_max",
                                  "divide", "multiply", "subtract", "true_divide"])
def test_arithmetic_aliases_are_methods_too(name):
    a, b = np.array([1.5, -2.0, 0.75]), np.array([0.5, 2.0, -1.0])
    args = {"clamp_min": (0.5,), "clamp_max": (0.5,), "negative": (), "absolute": ()}.get(
        name, (fnn.tensor(b),))
    np.testing.assert_array_equal(getattr(fnn.tensor(a), name)(*args).numpy(),
                                  getattr(fnn, name)(fnn.tensor(a), *args).numpy())


def test_masked_fill_detach_dropout_and_cosine_similarity_at_top_level():
    x = fnn.tensor(X[:, :2].copy(), requires_grad=True)
    filled = fnn.masked_fill(x, fnn.tensor([[True, False], [False, True]]), 9.0)
    np.testing.assert_array_equal(filled.numpy(), [[9.0, -2.0], [np.nan, 9.0]])
    cut = fnn.detach(x)
    assert not cut.requires_grad and np.array_equal(cut.numpy(), x.numpy(), equal_nan=True)
    kept = fnn.dropout(fnn.ones(1000), 0.25, True)
    values = np.unique(kept.numpy())
    assert set(values.tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert 0.15 < (kept.numpy() == 0).mean() < 0.35
    np.testing.assert_array_equal(fnn.dropout(fnn.ones(4), 0.5, False).numpy(), np.ones(4))
    a, b = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[2.0, 1.0], [1.0, 1.0]])
    want = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    check(lambda p, q: fnn.cosine_similarity(p, q), lambda p, q: want, a, b,
          torch_run=lambda p, q: torch.cosine_similarity(p, q))


def test_bad_inputs_name_the_op():
    with pytest.raises(TypeError, match="eq: expected a fastnn Tensor"):
        fnn.eq([1.0], 2.0)
    with pytest.raises(TypeError, match="rsub: expected a fastnn Tensor"):
        fnn.rsub(1.0, fnn.ones(2))


FLOATS = [("float16", np.float16), ("float32", np.float32), ("float64", np.float64)]


@pytest.mark.parametrize("name, np_type", FLOATS)
def test_finfo_matches_numpy_and_torch(name, np_type):
    info, ref = fnn.finfo(getattr(fnn, name)), np.finfo(np_type)
    assert (info.bits, info.eps, info.max, info.min) == (ref.bits, ref.eps, ref.max, ref.min)
    assert info.tiny == info.smallest_normal == ref.smallest_normal
    assert info.resolution == 10.0 ** -ref.precision and info.dtype == name
    if torch is not None:
        theirs = torch.finfo(getattr(torch, name))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(info, field) == getattr(theirs, field), field


def test_finfo_bfloat16_default_and_iinfo():
    bf = fnn.finfo(fnn.bfloat16)
    assert (bf.bits, bf.eps, bf.tiny) == (16, 2.0 ** -7, 2.0 ** -126)
    assert bf.max == (2 - 2.0 ** -7) * 2.0 ** 127
    assert fnn.finfo().dtype == "float32"
    for name, np_type in (("int32", np.int32), ("int64", np.int64)):
        info = fnn.iinfo(getattr(fnn, name))
        ref = np.iinfo(np_type)
        assert (info.bits, info.min, info.max, info.dtype) == (ref.bits, ref.min, ref.max, name)
    if torch is not None:
        assert bf.max == torch.finfo(torch.bfloat16).max
        assert bf.resolution == torch.finfo(torch.bfloat16).resolution
    with pytest.raises(TypeError, match="finfo: expected a floating dtype, got int32"):
        fnn.finfo(fnn.int32)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype, got float32"):
        fnn.iinfo(fnn.float32)


def _operands(lib):
    t = lib.tensor
    return [(t([1]), 2.5), (2, 3.0), (True, 2), (t(1.0, dtype=lib.float64), t([1.0])),
            (t([True]), 3), (t([1], dtype=lib.int32), t(2)), (t([1.0]), t([1], dtype=lib.int64)),
            (t([1], dtype=lib.int32), t(2.0, dtype=lib.float64)), (t([True]), False)]


def test_result_type_follows_the_ops_own_promotion():
    want = [fnn.float32, fnn.float32, fnn.int64, fnn.float32, fnn.int64, fnn.int32,
            fnn.float32, fnn.float64, fnn.bool]
    got = [fnn.result_type(a, b) for a, b in _operands(fnn)]
    assert got == want
    for (a, b), dtype in zip(_operands(fnn), got):  # the op itself agrees
        if isinstance(a, fnn.Tensor) and isinstance(b, fnn.Tensor):
            assert (a + b).dtype == dtype
    if torch is not None:
        theirs = [torch.result_type(a, b) for a, b in _operands(torch)]
        assert [d.name for d in got] == [str(d).rpartition(".")[2] for d in theirs]


def test_promote_types_and_can_cast():
    names = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
    for a in names:
        for b in names:
            got = fnn.promote_types(getattr(fnn, a), getattr(fnn, b))
            cast = fnn.can_cast(getattr(fnn, a), getattr(fnn, b))
            if torch is not None:
                assert got.name == str(torch.promote_types(getattr(torch, a),
                                                           getattr(torch, b))).split(".")[1]
                assert cast == torch.can_cast(getattr(torch, a), getattr(torch, b))
    assert fnn.promote_types(fnn.int32, fnn.float16) is fnn.float16
    assert fnn.can_cast(fnn.float64, fnn.float32) and not fnn.can_cast(fnn.float32, fnn.int64)


def test_is_nonzero():
    assert fnn.is_nonzero(fnn.tensor([0.5])) and not fnn.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero: .*more than one value"):
        fnn.is_nonzero(fnn.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="is_nonzero: .*no values"):
        fnn.is_nonzero(fnn.zeros(0))


def test_inference_mode_as_context_and_decorator():
    x = fnn.ones(2, requires_grad=True)
    assert not fnn.is_inference_mode_enabled()
    with fnn.inference_mode():
        assert fnn.is_inference_mode_enabled() and not (x * 2).requires_grad
        with fnn.inference_mode(False):
            assert not fnn.is_inference_mode_enabled()
    assert (x * 2).requires_grad and not fnn.is_inference_mode_enabled()

    @fnn.inference_mode
    def bare():
        return (x * 2).requires_grad

    @fnn.inference_mode()
    def called():
        return fnn.is_inference_mode_enabled()

    assert bare() is False and called() is True and fnn.is_grad_enabled()
    with pytest.raises(TypeError, match="inference_mode: mode must be True or False"):
        fnn.inference_mode("yes")
