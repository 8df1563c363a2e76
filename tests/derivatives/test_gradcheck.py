"""gradcheck and gradgradcheck: they pass right gradients and catch wrong ones, as torch's."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.autograd import Function, GradcheckError, gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _leaf(shape, dtype=fnn.float64):
    return fnn.tensor(RNG.normal(size=shape), dtype=dtype, requires_grad=True)


class WrongScale(Function):
    """x^2 with a backward off by 10 %."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x * 2.2


class FirstOrderOnly(Function):
    """x^2 whose backward is right but detached from x: second derivatives are lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.detach() * 2


def test_right_gradients_pass():
    a, b = _leaf((3, 2)), _leaf((2,))
    assert gradcheck(lambda x, y, k: (x * y).sum(0) ** k, (a, b, 3))
    assert gradcheck(lambda x, y: (fnn.tanh(x) @ y, x.exp()), (a, b))
    assert gradcheck(lambda x: x.sin(), _leaf((4,)))  # one tensor, not a tuple
    assert gradgradcheck(lambda x, y: (fnn.tanh(x) @ y).sum() * x, (a, b))
    assert gradcheck(FirstOrderOnly.apply, (_leaf((3,)),))


def test_a_wrong_backward_is_caught():
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect "
                                             "to input 0"):
        gradcheck(WrongScale.apply, (_leaf((3,)),))
    assert gradcheck(WrongScale.apply, (_leaf((3,)),), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)


def test_gradgradcheck_catches_a_missing_second_derivative():
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(FirstOrderOnly.apply, (_leaf((3,)),))
    grad_out = fnn.tensor(RNG.normal(size=3), dtype=fnn.float64, requires_grad=True)
    assert gradgradcheck(lambda x: x ** 3, (_leaf((3,)),), (grad_out,))


def test_tolerances_decide():
    x = _leaf((3,))
    assert gradcheck(WrongScale.apply, (x,), rtol=0.2, atol=0.0)
    assert not gradcheck(WrongScale.apply, (x,), rtol=0.05, atol=0.0, raise_exception=False)


def test_inputs_are_checked_as_torch():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda x: x * 2, (fnn.tensor([1.0, 2.0], dtype=fnn.float64),))
    with pytest.warns(UserWarning, match="not a double precision"):
        gradcheck(lambda x: x * 2, (_leaf((2,), fnn.float32),), atol=1e-2, rtol=1e-2)
    with pytest.raises(NotImplementedError, match="check_forward_ad"):
        gradcheck(lambda x: x * 2, (_leaf((2,)),), check_forward_ad=True)


def test_outputs_that_need_no_grad():
    x = _leaf((3,))
    assert gradcheck(lambda t: (t * 2, (t > 0).long()), (x,))
    flat = fnn.tensor([1.0, 2.0, 3.0], dtype=fnn.float64)
    assert gradcheck(lambda t: flat * 1.0, (x,))  # constant: numerical gradient zero
    with pytest.raises(GradcheckError, match="expected to be zero"):
        gradcheck(lambda t: t.detach() * 2, (x,))
