"""sort, argsort, topk, kthvalue, median, mode, max/min with a dim, aminmax, cummax, cummin:
the named tuples, values, indices and gradients against PyTorch's."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

torch = pytest.importorskip("torch")

NAN = float("nan")

# (name, fastnn call, torch call): each takes the tensor and returns what the op returns
CASES = [
    ("max dim", lambda x: x.max(1), lambda x: x.max(1)),
    ("max dim= keepdim", lambda x: fnn.max(x, dim=0, keepdim=True),
     lambda x: torch.max(x, dim=0, keepdim=True)),
    ("max axis=", lambda x: x.max(axis=-1), lambda x: x.max(dim=-1)),
    ("min dim", lambda x: x.min(0), lambda x: x.min(0)),
    ("min keepdims=", lambda x: fnn.min(x, axis=1, keepdims=True),
     lambda x: torch.min(x, 1, keepdim=True)),
    ("sort", lambda x: x.sort(), lambda x: x.sort()),
    ("sort dim 0 descending", lambda x: fnn.sort(x, 0, descending=True),
     lambda x: torch.sort(x, 0, descending=True)),
    ("sort stable", lambda x: x.sort(dim=1, stable=True), lambda x: x.sort(dim=1, stable=True)),
    ("topk", lambda x: x.topk(2), lambda x: x.topk(2)),
    ("topk smallest dim 0", lambda x: fnn.topk(x, 2, dim=0, largest=False),
     lambda x: torch.topk(x, 2, dim=0, largest=False)),
    ("kthvalue", lambda x: x.kthvalue(3), lambda x: x.kthvalue(3)),
    ("kthvalue dim 0 keepdim", lambda x: fnn.kthvalue(x, 1, 0, True),
     lambda x: torch.kthvalue(x, 1, 0, True)),
    ("median dim", lambda x: x.median(1), lambda x: x.median(1)),
    ("median dim 0 keepdim", lambda x: fnn.median(x, 0, keepdim=True),
     lambda x: torch.median(x, 0, keepdim=True)),
    ("cummax", lambda x: x.cummax(1), lambda x: x.cummax(1)),
    ("cummin dim 0", lambda x: fnn.cummin(x, dim=0), lambda x: torch.cummin(x, dim=0)),
    ("aminmax dim", lambda x: x.aminmax(dim=1), lambda x: x.aminmax(dim=1)),
    ("aminmax all", lambda x: fnn.aminmax(x), lambda x: torch.aminmax(x)),
]


def _as_torch(x: np.ndarray, grad=False):
    return torch.tensor(x, dtype=torch.float64, requires_grad=grad)


def _check(got, want, indices=True):
    assert type(got).__name__ == type(want).__name__.rpartition(".")[2]
    if hasattr(want, "_fields"):
        assert got._fields == tuple(want._fields)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w, field in zip(got, want, type(got)._fields):
        if field == "indices":
            assert g.dtype == fnn.int64
            if not indices:
                continue
        np.testing.assert_array_equal(g.numpy(), w.detach().numpy(), err_msg=field)


@pytest.mark.parametrize("name, run, ref", CASES, ids=[c[0] for c in CASES])
def test_values_indices_and_gradients_match_pytorch(name, run, ref, device):
    data = np.random.default_rng(0).permutation(20).reshape(4, 5) / 7.0  # no ties
    x = fnn.tensor(data, dtype=fnn.float64, device=device, requires_grad=True)
    xt = _as_torch(data, grad=True)
    got, want = run(x), ref(xt)
    _check(got, want)
    weights = np.random.default_rng(1).standard_normal(got[0].shape)
    (got[0] * fnn.tensor(weights, device=device)).sum().backward()
    (want[0] * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


# ties and NaN: where PyTorch fixes which index is taken, so does fastnn
EDGE = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [NAN, 1.0, NAN, 0.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
EDGE_CASES = [c for c in CASES if not c[0].startswith(("kthvalue", "topk"))]


@pytest.mark.parametrize("name, run, ref", EDGE_CASES, ids=[c[0] for c in EDGE_CASES])
def test_ties_and_nan_as_pytorch(name, run, ref, device):
    _check(run(fnn.tensor(EDGE, device=device)), ref(torch.tensor(EDGE)))


def test_topk_and_kthvalue_values_with_ties_and_nan(device):
    x = fnn.tensor(EDGE, device=device)
    for got, want in [(x.topk(2), torch.tensor(EDGE).topk(2)),
                      (x.topk(3, largest=False), torch.tensor(EDGE).topk(3, largest=False)),
                      (x.kthvalue(2), torch.tensor(EDGE).kthvalue(2))]:
        _check(got, want, indices=False)


def test_gradient_goes_to_the_selected_element_only():
    # amax shares a tie's gradient; max(dim), like PyTorch's, gives it to the index taken
    data = np.array([[1.0, 3.0, 3.0, 2.0]])
    for op in ("max", "median", "cummax"):
        x, xt = fnn.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        getattr(x, op)(1)[0].sum().backward()
        getattr(xt, op)(1)[0].sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy(), err_msg=op)


def test_gradient_by_finite_differences():
    from tests.helpers import finite_difference, tape_grads

    data = np.random.default_rng(3).permutation(12).reshape(3, 4) * 0.37
    for op in (lambda t: t.sort(1, descending=True).values, lambda t: t.topk(2, 0).values,
               lambda t: t.kthvalue(2, 1).values, lambda t: t.cummin(1).values):
        def host(a, op=op):
            return op(fnn.tensor(a)).numpy()

        want, weights = finite_difference(host, [data], 0)
        (got,) = tape_grads(op, [data], weights)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_without_a_dim_values_only():
    data = np.array([[4.0, -1.0, 7.0], [0.5, 2.0, 9.0]])
    x, xt = fnn.tensor(data), torch.tensor(data)
    for got, want in [(x.max(), xt.max()), (x.min(), xt.min()), (x.median(), xt.median()),
                      (fnn.max(x, (0, 1)), xt.amax((0, 1))), (x.min(dim=(1,)), xt.amin((1,))),
                      (x.max(None, keepdim=True), xt.amax((0, 1), keepdim=True))]:
        assert isinstance(got, fnn.Tensor)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert fnn.median(fnn.tensor([1.0, 2.0, 3.0, 4.0])).item() == 2.0  # the lower median
    assert np.isnan(fnn.median(fnn.zeros((0,))).item())


def test_max_of_two_tensors_is_the_elementwise_maximum():
    a, b = fnn.tensor([1.0, 5.0]), fnn.tensor([3.0, 2.0])
    assert fnn.max(a, b).tolist() == [3.0, 5.0] and a.min(b).tolist() == [1.0, 2.0]


def test_argsort_mode_and_integers():
    data = np.array([[3, 1, 3, 1, 2], [2, 2, 5, 5, 5], [7, 7, 7, 7, 7]])
    x, xt = fnn.tensor(data), torch.tensor(data)
    _check(x.mode(1), xt.mode(1))
    _check(fnn.mode(x, 0, keepdim=True), torch.mode(xt, 0, keepdim=True))
    want = torch.sort(xt, dim=1, descending=True, stable=True).indices
    np.testing.assert_array_equal(x.argsort(1, descending=True).numpy(), want.numpy())
    np.testing.assert_array_equal(fnn.argsort(x, dim=0).numpy(),
                                  torch.sort(xt, dim=0, stable=True).indices.numpy())
    _check(x.max(0), xt.max(0))
    _check(x.cummin(1), xt.cummin(1))
    flags = fnn.tensor([[True, False, True]])
    _check(flags.max(1), torch.tensor([[True, False, True]]).max(1))
    _check(flags.cummax(1), torch.tensor([[True, False, True]]).cummax(1))


def test_zero_dim_tensors():
    x, xt = fnn.tensor(2.5), torch.tensor(2.5)
    for op in ("sort", "max", "min", "median", "cummax", "cummin", "mode"):
        _check(getattr(x, op)(0), getattr(xt, op)(0))
    _check(x.topk(1), xt.topk(1))
    _check(x.kthvalue(1), xt.kthvalue(1))


def test_named_tuples_unpack_and_live_in_return_types():
    values, indices = fnn.tensor([[1.0, 2.0]]).max(1)
    assert values.tolist() == [2.0] and indices.tolist() == [1]
    result = fnn.tensor([3.0, 1.0]).sort()
    assert isinstance(result, fnn.return_types.sort)
    assert result._fields == ("values", "indices")
    assert fnn.return_types.aminmax._fields == ("min", "max")
    assert F.sort is fnn.sort and F.topk is fnn.topk


BAD = [
    (lambda: fnn.tensor([1.0, 2.0]).topk(3), ValueError, "topk: k=3"),
    (lambda: fnn.tensor([1.0, 2.0]).kthvalue(0), ValueError, "kthvalue: k=0"),
    (lambda: fnn.tensor([1.0, 2.0]).topk(1.5), TypeError, "topk: k must be an int"),
    (lambda: fnn.tensor([1.0, 2.0]).sort(2), IndexError, "sort: dim 2 is out of range"),
    (lambda: fnn.tensor([1.0, 2.0]).sort(descending="yes"), TypeError, "descending"),
    (lambda: fnn.zeros((2, 0)).max(1), IndexError, "max: dim 1 of shape (2, 0) is empty"),
    (lambda: fnn.zeros((0, 2)).median(0), IndexError, "median: dim 0"),
    (lambda: fnn.tensor([1.0]).cummax(), TypeError, "cummax: missing dim"),
    (lambda: fnn.sort([3, 1]), TypeError, "sort: expected a fastnn Tensor"),
    (lambda: fnn.tensor([1.0]).max(dim=0, axis=0), TypeError, "both dim= and axis="),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[b[2] for b in BAD])
def test_bad_input_says_what_to_fix(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_on_views_of_other_tensors(device):
    # transposed, strided, reshaped and expanded views: the host order and the gather
    # both read the view's elements, not its base's
    y = fnn.randn(4, 6, device=device, seed=5)
    h = y.numpy()
    for view, ref in [(y.T, h.T), (y[:, 1::2], h[:, 1::2]), (y[1:3].view(-1), h[1:3].reshape(-1)),
                      (y.expand(2, 4, 6), np.broadcast_to(h, (2, 4, 6)))]:
        np.testing.assert_array_equal(view.sort(-1).values.numpy(), np.sort(ref, -1))
        np.testing.assert_array_equal(view.max(-1).indices.numpy(), ref.argmax(-1))
        np.testing.assert_array_equal(view.cummax(-1).values.numpy(),
                                      np.maximum.accumulate(ref, -1))
        np.testing.assert_array_equal(view.topk(2, -1, largest=False).values.numpy(),
                                      np.sort(ref, -1)[..., :2])


@pytest.mark.parametrize("data", [
    [[2.0, 1.0, 2.0, 0.0, 1.0, 2.0], [1.0, 1.0, 3.0, 3.0, 0.0, 1.0]],  # a tied median
    [[NAN, 1.0, NAN], [0.0, 1.0, 2.0]],  # median(): NaN, shared by the NaNs
    [[-float("inf"), -float("inf"), 1.0, 2.0]]])
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_without_a_dim_shares_its_gradient_evenly(op, data):
    """PyTorch's median() and nanmedian() share the gradient evenly among the elements
    equal to the value (with a dim, it goes to the index instead)."""
    data = np.array(data)
    x, xt = fnn.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (getattr(x, op)() * -3.0).backward()
    (getattr(xt, op)() * -3.0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(np.signbit(x.grad.numpy()), np.signbit(xt.grad.numpy()))
