"""Elementwise math, // and %, bitwise ops and type promotion, against NumPy float64 and
PyTorch (values and gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.helpers import outcomes_as_torch

rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (4, 5))
X[0, :4] = [0.5, -0.5, 1.5, -2.5]  # halves: round to even
POS = rng.uniform(0.1, 3, (4, 5))

UNARY = [("sin", np.sin, X), ("cos", np.cos, X), ("tan", np.tan, X / 3),
         ("log1p", np.log1p, POS), ("expm1", np.expm1, X), ("log2", np.log2, POS),
         ("exp2", np.exp2, X), ("rsqrt", lambda a: 1 / np.sqrt(a), POS),
         ("square", np.square, X), ("reciprocal", np.reciprocal, POS),
         ("floor", np.floor, X), ("ceil", np.ceil, X), ("round", np.round, X),
         ("trunc", np.trunc, X), ("sign", np.sign, X)]


@pytest.mark.parametrize("name,ref,data", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_numpy(device, name, ref, data):
    x = fnn.tensor(data, device=device)
    np.testing.assert_allclose(getattr(x, name)().numpy(), ref(data), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(getattr(fnn, name)(x).numpy(), ref(data), rtol=1e-13,
                               atol=1e-15)


@pytest.mark.parametrize("name,ref,data", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_match_torch(name, ref, data):
    torch = pytest.importorskip("torch")
    x, t = fnn.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    if name == "sign":
        return  # no gradient recorded (it is 0 everywhere it exists)
    getattr(x, name)().sum().backward()
    getattr(t, name)().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_precision_near_zero():
    tiny = np.array([1e-20, -1e-17, 1e-10])
    np.testing.assert_allclose(fnn.tensor(tiny).expm1().numpy(), np.expm1(tiny), rtol=1e-15)
    np.testing.assert_allclose(fnn.tensor(tiny).log1p().numpy(), np.log1p(tiny), rtol=1e-15)


def test_clamp_and_clip(device):
    x = fnn.tensor(np.array([-2.0, -1.0, 0.0, 1.0, 3.0, np.nan]), device=device,
                   requires_grad=True)
    out = x.clamp(min=-1.0, max=1.0)
    np.testing.assert_array_equal(out.numpy(), [-1, -1, 0, 1, 1, np.nan])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 1, 0, 1])  # as PyTorch
    np.testing.assert_array_equal(fnn.clip(x, 0).numpy(), [0, 0, 0, 1, 3, np.nan])
    with pytest.raises(ValueError, match="give min, max or both"):
        x.clamp()


def test_isnan_isinf_isfinite(device):
    a = np.array([1.0, np.nan, np.inf, -np.inf])
    x = fnn.tensor(a, device=device)
    np.testing.assert_array_equal(x.isnan().numpy(), np.isnan(a))
    np.testing.assert_array_equal(fnn.isinf(x).numpy(), np.isinf(a))
    np.testing.assert_array_equal(x.isfinite().numpy(), np.isfinite(a))
    assert fnn.tensor([1, 2], device=device).isfinite().all().item()


def test_floor_division_and_remainder_as_python(device):
    a, b = np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])
    x, y = fnn.tensor(a, device=device), fnn.tensor(b, device=device)
    np.testing.assert_array_equal((x // y).numpy(), a // b)
    np.testing.assert_array_equal((x % y).numpy(), a % b)
    np.testing.assert_array_equal((x % 3).numpy(), a % 3)
    np.testing.assert_array_equal((10 // y).numpy(), 10 // b)
    f = fnn.tensor(a * 1.5, device=device)
    np.testing.assert_allclose((f // 2).numpy(), np.floor(a * 1.5 / 2))
    np.testing.assert_allclose((f % -2.0).numpy(), np.mod(a * 1.5, -2.0))
    assert (x // y).dtype is fnn.int64 and (f % 2).dtype is fnn.float64


def test_floor_division_of_two_bools_is_refused_as_pytorchs():
    """bool // bool gave a tensor labelled bool over NumPy's int8 data (printed 1 and 0);
    PyTorch refuses it. bool // int is int64, as PyTorch's."""
    m = fnn.tensor([True, False])
    for other in (fnn.tensor([True, True]), True):
        with pytest.raises(NotImplementedError, match="floor_divide"):
            m // other
    got = m // 1
    assert got.dtype is fnn.int64 and got.tolist() == [1, 0]
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError):
        torch.tensor([True, False]) // torch.tensor([True, True])


@pytest.mark.parametrize("call", [
    lambda L: L.add(L.tensor([1, 2]), L.tensor([1, 2]), alpha=2.5),
    lambda L: L.tensor([1, 2]).sub(1, alpha=0.5),
    lambda L: L.tensor([1, 2]).add_(L.tensor([1, 2]), alpha=0.5),
    lambda L: L.add(L.tensor([1.0, 2.0]), L.tensor([1, 2]), alpha=2.5),
    lambda L: L.tensor([1, 2]).add(1.5, alpha=2.5),
    lambda L: L.tensor([1, 2]).sub(L.tensor([1, 2]), alpha=2),
])
def test_a_float_alpha_with_integer_inputs_is_refused_as_pytorchs(call):
    """add(int, int, alpha=2.5) made the integer sum a float one silently; PyTorch refuses a
    float alpha where both inputs are integers."""
    ours, theirs = outcomes_as_torch(call)
    assert ours == theirs


def test_bitwise(device):
    a, b = np.array([5, -3, 12]), np.array([3, 6, -1])
    x, y = fnn.tensor(a, device=device), fnn.tensor(b, device=device)
    np.testing.assert_array_equal((x & y).numpy(), a & b)
    np.testing.assert_array_equal((x | y).numpy(), a | b)
    np.testing.assert_array_equal((x ^ 6).numpy(), a ^ 6)
    np.testing.assert_array_equal((~x).numpy(), ~a)
    m = x > 0
    np.testing.assert_array_equal((~m).numpy(), ~(a > 0))
    np.testing.assert_array_equal((m & (y > 0)).numpy(), (a > 0) & (b > 0))
    np.testing.assert_array_equal((m | True).numpy(), [True] * 3)
    with pytest.raises(TypeError, match="bitwise_and: defined on bool and integer"):
        fnn.ones(2) & fnn.ones(2)


def test_type_promotion_as_pytorch():
    torch = pytest.importorskip("torch")
    f32, f64, i32, i64 = fnn.float32, fnn.float64, fnn.int32, fnn.int64
    pairs = [((2,), f32, (), f64), ((2,), i64, (), f64), ((2,), i32, (), i64),
             ((), f32, (), f64), ((2,), f32, (2,), f64), ((2,), fnn.bool, (), i64),
             ((2,), f64, (), f32), ((2,), i32, (2,), i64)]
    for sa, da, sb, db in pairs:
        a, b = fnn.ones(sa, dtype=da), fnn.ones(sb, dtype=db)
        ta = torch.ones(sa, dtype=getattr(torch, da.name))
        tb = torch.ones(sb, dtype=getattr(torch, db.name))
        assert (a + b).dtype.name == str((ta + tb).dtype).split(".")[1], (sa, da, sb, db)
    assert (fnn.ones(2, dtype=i32) + 5).dtype is i32
    assert (fnn.ones(2, dtype=i64) * 2.5).dtype is f32


def test_repr_as_pytorch_prints_it():
    assert repr(fnn.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(fnn.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(fnn.tensor([1.0], dtype=fnn.float64)) == "tensor([1.], dtype=float64)"
    leaf = fnn.ones(2, requires_grad=True)
    assert repr(leaf) == "tensor([1., 1.], requires_grad=True)"
    assert repr(leaf * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"


# ---------------------------------------------------------------- issue 25 edges


def test_gradients_through_sign_and_remainder_as_torch(device):
    # (x.sign() * 2).sum().backward() raised (sign recorded nothing); x % False gave a NaN
    # gradient (torch: 1); the expected values are torch 2.13's
    x = fnn.tensor([0.3, -1.2, 2.0], device=device, requires_grad=True)
    (x.sign() * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])
    x = fnn.tensor([0.3, -1.2, 2.0], device=device, requires_grad=True)
    out = x % False
    out.sum().backward()
    assert np.isnan(out.numpy()).all()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
    x = fnn.tensor([0.3, -1.2, 2.0], device=device, requires_grad=True)
    b = fnn.tensor([0.5, 0.5, 0.7], device=device, requires_grad=True)
    (x % b).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(b.grad.numpy(), [0, 3, -2])  # -(x // b)


def test_python_bools_and_bool_tensors_in_arithmetic_as_torch(device):
    # t + True was refused, bool % 1.5 failed inside sub, square(bool) stayed bool
    def on(values):
        return fnn.tensor(values, device=device)

    cases = [
        (on([1.5]) + True, [2.5], fnn.float32), (True + on([1.5]), [2.5], fnn.float32),
        (on([1.5]) - True, [0.5], fnn.float32), (on([2]) * False, [0], fnn.int64),
        (on([True]) + True, [True], fnn.bool), (on([True]) * False, [False], fnn.bool),
        (on([True]) % 1.5, [1.0], fnn.float32), (on([True, False]) % 2, [1, 0], fnn.int64),
        (on([5.0, -3.0]) % on([True, True]), [0.0, 0.0], fnn.float32),
        (on([True, False]).square(), [1, 0], fnn.int64),
    ]
    for got, want, dtype in cases:
        assert got.dtype is dtype, (got, want)
        np.testing.assert_array_equal(got.numpy(), want)
    torch = pytest.importorskip("torch")
    assert torch.tensor([True]).square().dtype is torch.int64
    assert (torch.tensor([True]) % 1.5).tolist() == [1.0]
    assert (torch.tensor([True]) + True).dtype is torch.bool


def test_bitwise_python_ints_wrap_into_the_dtype_as_torch(device):
    torch = pytest.importorskip("torch")
    host = np.array([1, 2, -7], dtype=np.int32)
    x, t = fnn.tensor(host, device=device), torch.tensor(host)
    for value in (0xFFFFFFFF, 2**32 + 3, -2**31 - 1, 2**63 - 1, 2**64 - 1):
        for op in ("__or__", "__and__", "__xor__", "__ror__"):
            got = getattr(x, op)(value).numpy()
            np.testing.assert_array_equal(got, getattr(t, op)(value).numpy())
    x64 = fnn.tensor(host.astype(np.int64), device=device)
    np.testing.assert_array_equal((x64 | 2**63).numpy(), (t.long() | 2**63).numpy())
    with pytest.raises(OverflowError, match="64 bits"):
        x | 2**64


def test_comparisons_with_python_bools_as_torch(device):
    # mask == True and x < False raised "expected a Tensor or a real number, got bool"
    mask = fnn.tensor([True, False], device=device)
    x = fnn.tensor([0.0, 1.0, 2.0], device=device)
    ints = fnn.tensor([0, 1, 2], device=device)
    cases = [(mask == True, [True, False]), (mask != True, [False, True]),  # noqa: E712
             (mask == False, [False, True]), (mask > False, [True, False]),  # noqa: E712
             (x == True, [False, True, False]), (x >= True, [False, True, True]),  # noqa: E712
             (x < False, [False, False, False]), (ints <= True, [True, True, False])]
    for got, want in cases:
        assert got.dtype is fnn.bool
        np.testing.assert_array_equal(got.numpy(), want)
    torch = pytest.importorskip("torch")
    ref = torch.tensor([0.0, 1.0, 2.0])
    assert (ref >= True).tolist() == [False, True, True]
    assert (torch.tensor([True, False]) > False).tolist() == [True, False]
