"""Conformance cases of the linear-algebra hooks (``linalg_solve`` through
``fnn.linalg.solve``, ``linalg_slogdet`` through ``fnn.linalg.slogdet``) and of the ops
composed of them (``linalg.inv``, ``linalg.det``, ``linalg.slogdet`` sign, ``logdet``), of
``linalg.cholesky`` (composed of elementwise ops and products), and
the singular-matrix contract: LinAlgError, LAPACK's info, a zero determinant).

Matrices are well conditioned (a scaled identity plus noise) with their rows shuffled, so
that partial pivoting must swap rows, and the float32 results sit within a few roundings
of NumPy's float64 ones. Gradients: dB = A^-T G, dA = -dB X^T for the solve; G A^-T for
logabsdet; G det A^-T for det.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn as fnn
from fastnn.conformance.case import Case, Sample, register, sum_to
from fastnn.conformance.compare import Mismatch

# a few roundings per element, times the (small) condition number of the samples
LINALG = {"float16": (4e-3, 2e-3), "float32": (2e-5, 2e-5), "float64": (1e-11, 1e-12)}


def matrices(rng, shape):
    """Well-conditioned (..., n, n) matrices whose rows are shuffled (so pivoting swaps)."""
    n = shape[-1]
    a = 0.3 * rng.normal(size=shape) + 2.0 * np.eye(n)
    order = rng.permutation(n)
    signs = rng.choice([-1.0, 1.0], size=shape[:-1] + (1,))  # negative determinants too
    return (a * signs)[..., order, :]


def _mt(x):
    return np.swapaxes(x, -1, -2)


def _solve_ref(a, b, left=True):
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if not left:
        a = _mt(a)
    rhs = b[..., None] if vector else (b if left else _mt(b))
    batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    n = a.shape[-1]
    a = np.broadcast_to(a, batch + (n, n))
    rhs = np.broadcast_to(rhs, batch + rhs.shape[-2:])
    x = np.linalg.solve(a, rhs) if n and a.size else np.zeros(rhs.shape)
    return x[..., 0] if vector else (x if left else _mt(x))


def _solve_grad(a, b, grad_out, left=True):
    """The left formulas on A' = A (left) or A^T (right), B' and X' the columns or the
    transposes: dB' = A'^-T G', dA' = -dB' X'^T, then transposed back."""
    x = _solve_ref(a, b, left)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if vector:
        g, x = grad_out[..., None], x[..., None]
    else:
        g, x = (grad_out, x) if left else (_mt(grad_out), _mt(x))
    grad_b = np.linalg.inv(_mt(a) if left else a) @ g
    grad_a = -grad_b @ _mt(x)
    grad_a = grad_a if left else _mt(grad_a)
    grad_b = grad_b[..., 0] if vector else (grad_b if left else _mt(grad_b))
    return sum_to(grad_a, a.shape), sum_to(grad_b, b.shape)


def _rows(*rows):
    """rows of (label, matrix shape, other arg shapes, params) -> samples(rng)."""
    def make(rng):
        return [Sample(label, (matrices(rng, shape),) + tuple(rng.normal(size=s) for s in rest),
                       params) for label, shape, rest, params in rows]
    return make


def _random(samples):
    def draw(data_draw):
        rng = np.random.default_rng(data_draw(st.integers(0, 2**31)))
        listed = samples(rng)
        return listed[data_draw(st.integers(0, len(listed) - 1))]
    return draw


def _case(name, run, ref, samples, edges=(), grad_ref=None, diff_args=(), composite=False):
    edge_samples = _rows(*edges)
    case = Case(name, run=run, ref=ref, samples=samples, grad_ref=grad_ref,
                diff_args=diff_args, edges=lambda rng, dtype: edge_samples(rng),
                random=_random(samples), tol=dict(LINALG), composite=composite)
    return register(case)


_SOLVE_ROWS = _rows(
    ("matrix rhs", (3, 3), [(3, 2)], {}),
    ("vector rhs", (4, 4), [(4,)], {}),
    ("batch of vectors", (2, 3, 3), [(2, 3)], {}),
    ("batch dims broadcast", (2, 1, 3, 3), [(4, 3, 2)], {}),
    ("left=False", (2, 3, 3), [(2, 4, 3)], {"left": False}),
    ("1 x 1", (1, 1), [(1, 3)], {}),
)
_case("linalg_solve", lambda a, b, left=True: fnn.linalg.solve(a, b, left=left), _solve_ref,
      _SOLVE_ROWS, edges=[("size-0 batch", (0, 3, 3), [(0, 3, 2)], {}),
                          ("0 x 0", (0, 0), [(0, 2)], {})],
      grad_ref=_solve_grad, diff_args=(0, 1))


def _inv_t(a):
    return _mt(np.linalg.inv(a))


_MATRIX_ROWS = _rows(("matrix", (3, 3), [], {}), ("batch", (2, 4, 4), [], {}),
                     ("1 x 1", (1, 1), [], {}))
_EMPTY = [("size-0 batch", (0, 3, 3), [], {}), ("0 x 0", (2, 0, 0), [], {})]


def _slogdet_ref(a):
    return np.linalg.slogdet(a)[1]


_case("linalg_slogdet", lambda a: fnn.linalg.slogdet(a).logabsdet, _slogdet_ref,
      _MATRIX_ROWS, edges=_EMPTY, diff_args=(0,),
      grad_ref=lambda a, grad_out: (grad_out[..., None, None] * _inv_t(a),))
_case("linalg.inv", fnn.linalg.inv, np.linalg.inv, _MATRIX_ROWS, edges=_EMPTY[:1],
      diff_args=(0,), composite=True,
      grad_ref=lambda a, grad_out: (-(_inv_t(a) @ grad_out @ _inv_t(a)),))
_case("linalg.det", fnn.linalg.det, np.linalg.det, _MATRIX_ROWS, edges=_EMPTY,
      diff_args=(0,), composite=True,
      grad_ref=lambda a, grad_out: ((grad_out * np.linalg.det(a))[..., None, None]
                                    * _inv_t(a),))
_case("linalg.slogdet", lambda a: fnn.linalg.slogdet(a).sign,
      lambda a: np.linalg.slogdet(a)[0], _MATRIX_ROWS, edges=_EMPTY, composite=True)
_case("logdet", fnn.logdet,
      lambda a: np.where(np.linalg.det(a) < 0, np.nan, np.linalg.slogdet(a)[1]),
      _MATRIX_ROWS, edges=_EMPTY, composite=True)



def _spd_rows(*rows):
    """rows of (label, shape) -> symmetric positive-definite samples(rng)."""
    def make(rng):
        out = []
        for label, shape in rows:
            b = 0.5 * rng.normal(size=shape)
            out.append(Sample(label, (b @ _mt(b) + np.eye(shape[-1]),), {}))
        return out
    return make


def _cholesky_grad(a, grad_out):
    """Murray's formula, symmetrised as torch's: with P = tril(L^T G), its diagonal
    halved, dA = sym(L^-T P L^-1)."""
    low = np.linalg.cholesky((a + _mt(a)) / 2)
    p = np.tril(_mt(low) @ grad_out)
    p = p - 0.5 * np.eye(a.shape[-1]) * p
    inv = np.linalg.inv(low)
    s = _mt(inv) @ p @ inv
    return ((s + _mt(s)) / 2,)


# run on sym(A): cholesky reads one triangle and gives the symmetric gradient (torch's),
# which is the finite differences' of the factor of sym(A)
_case("linalg.cholesky", lambda a: fnn.linalg.cholesky((a + a.mT) * 0.5),
      lambda a: np.linalg.cholesky((a + _mt(a)) / 2),
      _spd_rows(("matrix", (3, 3)), ("batch", (2, 4, 4)), ("1 x 1", (1, 1))),
      diff_args=(0,), composite=True, grad_ref=_cholesky_grad)

# ---------------------------------------------------------------- singular matrices

_SINGULAR = np.array([[[1.0, 2.0], [2.0, 4.0]],  # the second pivot is 4 - 2 * 2 = 0
                      [[1.0, 0.0], [0.0, 1.0]],
                      [[0.0, 0.0], [0.0, 0.0]],  # the first pivot is 0
                      [[0.0, 1.0], [1.0, 0.0]]])  # a swap, not singular
_INFO = [2, 0, 1, 0]  # LAPACK getrf's info for each


def _expect_raise(what, fn, *needles):
    try:
        fn()
    except fnn.linalg.LinAlgError as exc:
        if not isinstance(exc, RuntimeError) or not all(n in str(exc) for n in needles):
            raise Mismatch(f"{what}: the error {exc!r} does not name {needles}") from exc
        return
    raise Mismatch(f"{what}: no LinAlgError for a singular matrix")


def _check_singular(device, dtype, rng):
    a = fnn.tensor(_SINGULAR.astype(dtype), device=device)
    what = f"singular matrices on {device}, {dtype}"
    info = fnn.linalg.inv_ex(a).info.numpy()
    if info.tolist() != _INFO:
        raise Mismatch(f"{what}: inv_ex info {info.tolist()}, expected {_INFO} (getrf's)")
    info = fnn.linalg.solve_ex(a, fnn.ones(4, 2, dtype=a.dtype, device=device)).info.numpy()
    if info.tolist() != _INFO:
        raise Mismatch(f"{what}: solve_ex info {info.tolist()}, expected {_INFO}")
    _expect_raise(what, lambda: fnn.linalg.inv(a), "Batch element 0", "element 2 is zero")
    _expect_raise(what, lambda: fnn.linalg.inv(a[2]), "diagonal element 1 is zero")
    _expect_raise(what, lambda: fnn.linalg.solve(a[1:], fnn.ones(2, dtype=a.dtype,
                                                                 device=device)),
                  "Batch element 1", "singular")
    det = fnn.linalg.det(a).numpy()
    if det.tolist() != [0.0, 1.0, 0.0, -1.0]:
        raise Mismatch(f"{what}: det {det.tolist()}, expected [0, 1, 0, -1]")
    sign, logabs = fnn.linalg.slogdet(a)
    if sign.numpy().tolist() != [0.0, 1.0, 0.0, -1.0] or logabs.numpy()[0] != -np.inf:
        raise Mismatch(f"{what}: slogdet {sign.numpy()}, {logabs.numpy()}")
    x = fnn.linalg.solve(a[3], fnn.tensor(np.array([2.0, 3.0], dtype), device=device))
    if x.numpy().tolist() != [3.0, 2.0]:
        raise Mismatch(f"{what}: solve of a row swap gave {x.numpy()}, expected [3, 2]")


register(Case("linalg.singular", check=_check_singular, composite=True))
