"""The orthogonal polynomials of torch.special, each ``name(input, n)`` with x = ``input``
and the degree ``n`` (a tensor or a number, broadcast with x, truncated toward zero as
PyTorch's; 0 for n < 0): Chebyshev's ``chebyshev_polynomial_t``/``u``/``v``/``w`` and
their ``shifted_`` forms on [0, 1] (the plain ones at 2x - 1), Hermite's
``hermite_polynomial_h`` (physicists') and ``hermite_polynomial_he`` (probabilists'),
``laguerre_polynomial_l`` and ``legendre_polynomial_p``.

PyTorch's algorithm: the three-term recurrence up to n, with Chebyshev's closed forms
(T_n = cos(n t), U_n = sin((n+1) t) / sin t, ... with x = cos t) for |x| < 1 past degree
6 (T) or 8 (U, V, W), and the exact values at x = +-1; Hermite's are NaN past degree 512
(128 for float32 and half results). Composites of tensor ops; the recurrence runs to the
largest degree that needs it, which, for a tensor ``n``, is read back to the host (one
number). As PyTorch's, they carry no gradient.
"""

from __future__ import annotations

import math

from fastnn.ops import elementwise as ew
from fastnn.ops import mathops, movement
from fastnn.ops.special import acos as _acos
from fastnn.ops.special import const, done, lift, pair
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor

where = ew.where


def _operands(op: str, x, n) -> tuple:
    """(x, the degrees as whole numbers in x's dtype (-1 where not finite), the dtype of
    the result), x and n broadcast, float32 computed in float64 where the device has it."""
    x, n, out = pair(op, x, n)
    shape = ew.broadcast_shape(op, x.shape, n.shape)
    x, _ = lift(op, movement.broadcast_to(x.detach(), shape), precise=True)
    n = movement.broadcast_to(n.detach(), shape).to(x._dtype)
    n = where(ew.compare("less", ew.abs(n), math.inf), mathops.trunc(n), -1.0)
    return x, n, out


def _top(n: Tensor, needed: Tensor) -> int:
    """The largest degree where ``needed``, read back to the host (0 if none)."""
    if not n.numel():
        return 0
    return max(0, int(movement.max(where(needed, n, 0.0)).item()))


def _recurrence(n: Tensor, first: Tensor, second: Tensor, step, top: int) -> Tensor:
    """P_n from P_0 = first, P_1 = second and P_{k+1} = step(k, P_{k-1}, P_k)."""
    result = where(ew.compare("equal", n, 0.0), first, where(ew.compare("equal", n, 1.0),
                                                             second, 0.0))
    p, q = first, second
    for k in range(1, top):
        p, q = q, step(k, p, q)
        result = where(ew.compare("equal", n, float(k + 1)), q, result)
    return result


def _ones(x: Tensor) -> Tensor:
    return const(x, 1.0)


def _odd(n: Tensor) -> Tensor:
    return ew.compare("equal", ew.sub(n, ew.mul(mathops.floor(ew.mul(n, 0.5)), 2.0)), 1.0)


def _chebyshev(x: Tensor, n: Tensor, kind: str) -> Tensor:
    """T, U, V or W of degree n at x (PyTorch's chebyshev_polynomial_*_forward)."""
    a = ew.abs(x)
    inside = ew.compare("less", a, 1.0)
    closed = mathops.bitwise_and(inside, ew.compare("greater", n, 6.0 if kind == "t" else 8.0))
    two_x = ew.add(x, x)
    second = {"t": x, "u": two_x, "v": ew.sub(two_x, 1.0), "w": ew.add(two_x, 1.0)}[kind]
    top = _top(n, mathops.bitwise_not(closed))
    value = _recurrence(n, _ones(x), second, lambda k, p, q: ew.sub(ew.mul(two_x, q), p), top)
    t = _acos(where(inside, x, 0.0))
    if kind == "t":
        form = mathops.cos(ew.mul(n, t))
    elif kind == "u":
        form = ew.div(mathops.sin(ew.mul(ew.add(n, 1.0), t)), mathops.sin(t))
    elif kind == "v":
        form = ew.div(mathops.cos(ew.mul(ew.add(n, 0.5), t)), mathops.cos(ew.mul(t, 0.5)))
    else:
        form = ew.div(mathops.sin(ew.mul(ew.add(n, 0.5), t)), mathops.sin(ew.mul(t, 0.5)))
    value = where(closed, form, value)
    # the exact values at x = +-1
    odd_sign = where(_odd(n), -1.0, _ones(n))
    positive = ew.compare("greater", x, 0.0)
    if kind == "t":
        edge = where(positive, 1.0, odd_sign)
    elif kind == "u":
        edge = ew.mul(ew.add(n, 1.0), where(positive, 1.0, odd_sign))
    elif kind == "v":
        edge = where(positive, 1.0, ew.mul(ew.add(ew.add(n, n), 1.0), odd_sign))
    else:
        edge = where(positive, ew.add(ew.add(n, n), 1.0), odd_sign)
    value = where(ew.compare("equal", a, 1.0), edge, value)
    return where(ew.compare("less", n, 0.0), 0.0, value)


def _polynomial(op: str, kind: str, shifted: bool, x, n) -> Tensor:
    x, n, out = _operands(op, x, n)
    if shifted:
        x = ew.sub(ew.add(x, x), 1.0)
    return done(_chebyshev(x, n, kind), out)


@public(functional=False)
def chebyshev_polynomial_t(input, n):
    """Chebyshev's polynomial of the first kind T_n(x)."""
    return _polynomial("chebyshev_polynomial_t", "t", False, input, n)


@public(functional=False)
def chebyshev_polynomial_u(input, n):
    """Chebyshev's polynomial of the second kind U_n(x)."""
    return _polynomial("chebyshev_polynomial_u", "u", False, input, n)


@public(functional=False)
def chebyshev_polynomial_v(input, n):
    """Chebyshev's polynomial of the third kind V_n(x)."""
    return _polynomial("chebyshev_polynomial_v", "v", False, input, n)


@public(functional=False)
def chebyshev_polynomial_w(input, n):
    """Chebyshev's polynomial of the fourth kind W_n(x)."""
    return _polynomial("chebyshev_polynomial_w", "w", False, input, n)


@public(functional=False)
def shifted_chebyshev_polynomial_t(input, n):
    """T_n(2x - 1), Chebyshev's first kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_t", "t", True, input, n)


@public(functional=False)
def shifted_chebyshev_polynomial_u(input, n):
    """U_n(2x - 1), Chebyshev's second kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_u", "u", True, input, n)


@public(functional=False)
def shifted_chebyshev_polynomial_v(input, n):
    """V_n(2x - 1), Chebyshev's third kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_v", "v", True, input, n)


@public(functional=False)
def shifted_chebyshev_polynomial_w(input, n):
    """W_n(2x - 1), Chebyshev's fourth kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_w", "w", True, input, n)


def _hermite(op: str, x, n, physicists: bool) -> Tensor:
    x, n, out = _operands(op, x, n)
    limit = 512 if out.itemsize >= 8 else 128
    scale = 2.0 if physicists else 1.0
    top = min(_top(n, ew.compare("greater", n, 0.0)), limit)
    value = _recurrence(n, _ones(x), ew.mul(x, scale),
                        lambda k, p, q: ew.sub(ew.mul(ew.mul(x, scale), q), ew.mul(p, scale * k)),
                        top)
    value = where(ew.compare("greater", n, float(limit)), math.nan, value)
    return done(where(ew.compare("less", n, 0.0), 0.0, value), out)


@public(functional=False)
def hermite_polynomial_h(input, n):
    """The physicists' Hermite polynomial H_n(x) (NaN past degree 512; 128 in float32)."""
    return _hermite("hermite_polynomial_h", input, n, True)


@public(functional=False)
def hermite_polynomial_he(input, n):
    """The probabilists' Hermite polynomial He_n(x) (NaN past degree 512; 128 in float32)."""
    return _hermite("hermite_polynomial_he", input, n, False)


@public(functional=False)
def laguerre_polynomial_l(input, n):
    """Laguerre's polynomial L_n(x) (1 at x = 0)."""
    x, n, out = _operands("laguerre_polynomial_l", input, n)
    top = _top(n, ew.compare("greater", n, 0.0))
    value = _recurrence(n, _ones(x), ew.sub(1.0, x), lambda k, p, q: ew.div(
        ew.sub(ew.mul(ew.sub(2.0 * k + 1.0, x), q), ew.mul(p, float(k))), k + 1.0), top)
    value = where(ew.compare("equal", x, 0.0), 1.0, value)
    return done(where(ew.compare("less", n, 0.0), 0.0, value), out)


@public(functional=False)
def legendre_polynomial_p(input, n):
    """Legendre's polynomial P_n(x) (exactly +-1 at x = +-1)."""
    x, n, out = _operands("legendre_polynomial_p", input, n)
    top = _top(n, ew.compare("greater", n, 0.0))
    value = _recurrence(n, _ones(x), x, lambda k, p, q: ew.div(
        ew.sub(ew.mul(ew.mul(x, 2.0 * k + 1.0), q), ew.mul(p, float(k))), k + 1.0), top)
    ones = _ones(x)
    edge = where(mathops.bitwise_or(ew.compare("greater", x, 0.0), mathops.bitwise_not(_odd(n))),
                 ones, ew.neg(ones))
    value = where(ew.compare("equal", ew.abs(x), 1.0), edge, value)
    return done(where(ew.compare("less", n, 0.0), 0.0, value), out)
