"""The ``_`` methods derived from :data:`fastnn.ops.inplace_more.VALUE_OPS` and
``SHAPE_OPS``: each writes its op's result into x (views see it), refuses a leaf that
requires grad, records the write for backward as ``add_`` does; NumPy float64 references,
and PyTorch's values and gradients where it is installed."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops.inplace_more import SHAPE_OPS, VALUE_OPS
from tests.api.torch_names_check import torch

X = np.array([[0.3, -1.7, 2.5], [0.5, -0.25, 1.5]])
OTHER = np.array([[1.2, 0.7, -2.0], [0.4, 3.0, -0.6]])
PROBS = np.array([[0.1, 0.3, 0.5], [0.7, 0.9, 0.2]])

# op -> (input, args, NumPy reference); ops missing here are checked by the next table
REFERENCES = {
    "floor": (X, (), np.floor), "ceil": (X, (), np.ceil), "round": (X, (), np.round),
    "trunc": (X, (), np.trunc), "frac": (X, (), lambda a: a - np.trunc(a)),
    "reciprocal": (X, (), lambda a: 1 / a), "rsqrt": (PROBS, (), lambda a: a ** -0.5),
    "square": (X, (), np.square), "exp2": (X, (), np.exp2), "expm1": (X, (), np.expm1),
    "log1p": (PROBS, (), np.log1p), "cos": (X, (), np.cos), "sin": (X, (), np.sin),
    "logit": (PROBS, (), lambda a: np.log(a / (1 - a))),
    "nan_to_num": (np.array([np.nan, np.inf, -1.0]), (),
                   lambda a: np.nan_to_num(a, posinf=np.finfo(np.float64).max)),
    "atan2": (X, (OTHER,), np.arctan2), "hypot": (X, (OTHER,), np.hypot),
    "fmod": (X, (OTHER,), np.fmod), "remainder": (X, (OTHER,), np.mod),
    "negative": (X, (), np.negative), "absolute": (X, (), np.abs),
    "divide": (X, (OTHER,), np.divide), "true_divide": (X, (OTHER,), np.divide),
    "subtract": (X, (OTHER,), np.subtract), "multiply": (X, (OTHER,), np.multiply),
    "gt": (X, (OTHER,), np.greater), "le": (X, (OTHER,), np.less_equal),
    "not_equal": (X, (OTHER,), np.not_equal), "logical_not": (X, (), np.logical_not),
    "cumsum": (X, (1,), lambda a, d: np.cumsum(a, d)),
}


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_value_ops_write_their_result_into_x_and_its_views(op):
    data, args, reference = REFERENCES[op]
    x = fnn.tensor(data)
    view = x.reshape(-1)
    tensors = [fnn.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    assert getattr(x, op + "_")(*tensors) is x
    want = reference(data, *args).astype(np.float64)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(view.numpy(), want.reshape(-1), rtol=1e-12)


@pytest.mark.parametrize("op", VALUE_OPS)
def test_every_value_op_matches_torch_in_place(op):
    if torch is None:
        pytest.skip("PyTorch is not installed")
    if not hasattr(torch.Tensor, op + "_"):
        pytest.skip(f"this PyTorch has no Tensor.{op}_")
    binary = op in {"atan2", "arctan2", "hypot", "xlogy", "divide", "true_divide", "subtract",
                    "multiply", "fmod", "remainder", "floor_divide", "copysign", "eq", "ne",
                    "not_equal", "gt", "lt", "ge", "le", "greater", "less", "greater_equal",
                    "less_equal", "logical_and", "logical_or", "logical_xor", "float_power",
                    "igamma", "igammac"}
    integer = op.startswith("bitwise") or op in {"gcd", "lcm"}  # integer tensors only
    data = np.array([[3, 12, 5], [7, 1, 2]]) if integer else PROBS
    args = {"cumsum": (1,), "cumprod": (0,), "renorm": (2, 0, 0.5), "polygamma": (2,),
            "ldexp": (np.array([[1, -2, 0], [3, 0, 1]]),), "heaviside": (OTHER,),
            "addbmm": (np.ones((4, 2, 5)) * 0.5, np.ones((4, 5, 3)) * 0.25),
            "addr": (np.array([1.0, -2.0]), np.array([0.5, 1.5, 3.0]))}.get(
        op, (np.array([[1, 2, 1], [2, 1, 3]]) if integer else OTHER,) if binary or (
            integer and op != "bitwise_not") else ())
    mine, theirs = fnn.tensor(data), torch.tensor(data)
    getattr(mine, op + "_")(*[fnn.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    getattr(theirs, op + "_")(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                for a in args])
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    assert mine.dtype.name == str(theirs.dtype).rpartition(".")[2]


def test_gradients_flow_through_the_old_values_as_torch():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=X.shape)
    for op, args in (("sin", ()), ("atan2", (OTHER,)), ("square", ()), ("logit", (0.2,)),
                     ("multiply", (OTHER,))):
        grads = []
        for lib in [fnn] + ([torch] if torch is not None else []):
            leaf = lib.tensor(PROBS, requires_grad=True)
            y = leaf * 1.0
            getattr(y, op + "_")(*[lib.tensor(a) if isinstance(a, np.ndarray) else a
                                   for a in args])
            (y * lib.tensor(weight)).sum().backward()
            grads.append(leaf.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[-1], rtol=1e-10)
    leaf = fnn.tensor(PROBS, requires_grad=True)  # the float64 reference for sin_
    y = leaf * 1.0
    y.sin_()
    (y * fnn.tensor(weight)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), weight * np.cos(PROBS), rtol=1e-12)


def test_value_ops_refuse_a_leaf_and_a_lossy_cast():
    leaf = fnn.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="floor_: a leaf tensor that requires grad"):
        leaf.floor_()
    with fnn.no_grad():
        leaf.floor_()
    np.testing.assert_array_equal(leaf.numpy(), np.floor(X))
    with pytest.raises(RuntimeError, match="cos_: result type float32 can't be cast"):
        fnn.tensor([1, 2]).cos_()


def test_a_backward_through_an_overwritten_value_is_refused():
    leaf = fnn.tensor(PROBS, requires_grad=True)
    y = leaf * 1.0
    w = y.sin()  # its backward reads y, which cos_ then overwrites
    y.cos_()
    with pytest.raises(RuntimeError):
        w.sum().backward()


SHAPES = [("squeeze_", (), np.zeros((1, 3, 1)), lambda a: np.squeeze(a)),
          ("squeeze_", (0,), np.zeros((1, 3, 1)), lambda a: np.squeeze(a, 0)),
          ("unsqueeze_", (1,), np.zeros((2, 3)), lambda a: a[:, None]),
          ("t_", (), np.arange(6.0).reshape(2, 3), lambda a: a.T),
          ("transpose_", (0, 2), np.arange(24.0).reshape(2, 3, 4),
           lambda a: a.transpose(2, 1, 0)),
          ("swapdims_", (0, 1), np.arange(6.0).reshape(2, 3), lambda a: a.T)]


@pytest.mark.parametrize("name, args, data, reference", SHAPES,
                         ids=[f"{s[0]}{s[1]}" for s in SHAPES])
def test_shape_ops_change_x_itself(name, args, data, reference):
    x = fnn.tensor(data)
    assert getattr(x, name)(*args) is x
    np.testing.assert_array_equal(x.numpy(), reference(data))
    assert x.is_contiguous() or name in ("t_", "transpose_", "swapdims_")
    x.add_(1.0)  # still an ordinary tensor to write into
    np.testing.assert_array_equal(x.numpy(), reference(data) + 1)
    if torch is not None:
        theirs = torch.tensor(data)
        getattr(theirs, name)(*args)
        np.testing.assert_array_equal(x.numpy() - 1, theirs.numpy())


def test_shape_ops_keep_the_history_and_refuse_views():
    leaf = fnn.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = leaf * 2.0
    y.squeeze_().unsqueeze_(1).t_()
    assert y.shape == (1, 3)
    (y * fnn.tensor([[1.0, 10.0, 100.0]])).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[2.0, 20.0, 200.0]])
    with pytest.raises(RuntimeError, match="squeeze_: a leaf tensor that requires grad"):
        leaf.squeeze_()
    base = fnn.zeros(1, 3)
    view = base[0]
    for target in (base, view):
        with pytest.raises(RuntimeError, match="t_: changing a tensor's shape in place needs"):
            target.t_()
    assert set(SHAPE_OPS) == {"squeeze", "unsqueeze", "t", "transpose", "swapaxes",
                              "swapdims"}


def test_resize_reshapes_keeps_a_prefix_or_grows_as_torch():
    for module in (torch, fnn) if torch is not None else (fnn,):
        x = module.tensor([[0.0, 1, 2], [3, 4, 5]])
        assert x.resize_(3, 2) is x and x.tolist() == [[0, 1], [2, 3], [4, 5]]
        assert x.resize_(4).tolist() == [0, 1, 2, 3] and x.is_contiguous()
        empty = module.empty(0)
        assert empty.resize_(2, 3).shape == (2, 3) and empty.resize_((6,)).shape == (6,)
        assert module.zeros(2).resize_as_(module.zeros(3, 1)).shape == (3, 1)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            module.zeros(2, requires_grad=True).resize_(3)
    grown = fnn.tensor([1.0, 2.0]).resize_(2, 2)
    assert grown.tolist() == [[1.0, 2.0], [0.0, 0.0]]  # (PyTorch's new elements: unset)
    base = fnn.zeros(4)
    view = base[:2]
    with pytest.raises(RuntimeError, match="view"):
        base.resize_(2, 2)
    with pytest.raises(RuntimeError, match="view"):
        view.resize_(1, 2)
    assert view.resize_(2) is view


def test_apply_and_map_call_a_function_per_element_as_torch():
    for module in (torch, fnn) if torch is not None else (fnn,):
        x = module.tensor([1.0, 2.0, 3.0])
        assert x.apply_(lambda v: v * 2) is x and x.tolist() == [2.0, 4.0, 6.0]
        assert module.tensor([1, 2, 3]).apply_(lambda v: v / 2).tolist() == [0, 1, 1]
        assert module.tensor([True, False]).apply_(lambda v: not v).tolist() == [False, True]
        grid = module.tensor([[1.0, 2.0, 3.0]] * 2)
        grid.map_(module.tensor([10.0, 20.0, 30.0]), lambda a, b: a + b)
        assert grid.tolist() == [[11.0, 22.0, 33.0]] * 2
        base = module.zeros(2, 3)
        base[0].apply_(lambda v: 5.0)
        assert base.tolist() == [[5.0] * 3, [0.0] * 3]
        with pytest.raises(RuntimeError, match="requires grad"):
            module.tensor([1.0], requires_grad=True).apply_(lambda v: v)
    fresh = fnn.tensor([1.0, 2.0])
    fresh.apply_(lambda v: v)
    assert fresh.resize_(3).shape == (3,)  # (apply_ made no view of it)
