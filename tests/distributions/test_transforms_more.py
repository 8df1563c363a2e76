"""The transforms added after the first five (Power, Softplus, Softmax, StickBreaking,
LowerCholesky, PositiveDefinite, CorrCholesky, Reshape, Independent, Cat, Stack,
CumulativeDistribution), ``identity_transform`` and ``biject_to``/``transform_to``: round
trips, log-Jacobians against finite-difference Jacobians in float64, PyTorch's values,
shapes, caching and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.distributions as fd
from fastnn.distributions import constraints
from fastnn.distributions import transforms as T
from fastnn.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix

RNG = np.random.default_rng(70)


def _jacobian(fn, x, h=1e-6):
    """The central finite-difference Jacobian of ``fn`` (NumPy float64 vector -> vector)."""
    columns = []
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = h
        columns.append((fn(x + step) - fn(x - step)) / (2 * h))
    return np.stack(columns, -1)


def _fd_log_det(transform, x, out=lambda y: y):
    """``log |det J|`` of ``x -> out(transform(x))`` for one event ``x`` (a vector)."""
    def fn(v):
        return out(transform(fnn.tensor(v)).numpy()).reshape(-1)
    return np.linalg.slogdet(_jacobian(fn, x))[1]


@pytest.mark.parametrize("name", ["power", "power tensor", "softplus", "cdf"])
def test_elementwise_transforms_round_trip_and_log_jacobian(name):
    x = RNG.uniform(0.2, 2.0, (3, 4))
    transform = {"power": T.PowerTransform(2.5),
                 "power tensor": T.PowerTransform(fnn.tensor(RNG.uniform(-2, 2, (4,)))),
                 "softplus": T.SoftplusTransform(),
                 "cdf": T.CumulativeDistributionTransform(fd.Normal(0.5, 1.5))}[name]
    assert transform.bijective and transform.event_dim == 0
    y = transform(fnn.tensor(x))
    # a number exponent is a tensor of the default dtype (float32), as PyTorch's; the icdf
    # goes through erfinv
    rtol = {"power": 1e-6, "cdf": 1e-7}.get(name, 1e-9)
    np.testing.assert_allclose(transform.inv(y).numpy(), x, rtol=rtol)
    ladj = transform.log_abs_det_jacobian(fnn.tensor(x), y).numpy()
    h = 1e-6
    slope = (transform(fnn.tensor(x + h)).numpy() - transform(fnn.tensor(x - h)).numpy()) / (2 * h)
    np.testing.assert_allclose(ladj, np.log(np.abs(slope)), rtol=1e-6, atol=1e-7)
    inverse_ladj = transform.inv.log_abs_det_jacobian(y, fnn.tensor(x)).numpy()
    np.testing.assert_allclose(inverse_ladj, -ladj)


def test_power_transform_sign_shape_and_equality():
    exponent = fnn.tensor([2.0, -1.0, 0.5])
    transform = T.PowerTransform(exponent)
    np.testing.assert_array_equal(transform.sign.numpy(), [1.0, -1.0, 1.0])
    assert transform.forward_shape((4, 1)) == (4, 3) and transform.inverse_shape((3,)) == (3,)
    assert transform == T.PowerTransform(fnn.tensor([2.0, -1.0, 0.5]))
    assert transform != T.PowerTransform(fnn.tensor([2.0, 1.0, 0.5]))
    assert T.PowerTransform(3.0).exponent.dim() == 0
    assert transform.domain is constraints.positive and transform.codomain is constraints.positive


def test_stick_breaking_round_trip_simplex_and_log_jacobian():
    transform = T.StickBreakingTransform()
    x = RNG.normal(size=(2, 4))
    y = transform(fnn.tensor(x))
    assert y.shape == (2, 5) and bool(constraints.simplex.check(y).all().item())
    np.testing.assert_allclose(transform.inv(y).numpy(), x, rtol=1e-9, atol=1e-12)
    ladj = transform.log_abs_det_jacobian(fnn.tensor(x), y).numpy()
    for i in range(2):  # the Jacobian of the first K - 1 coordinates
        expected = _fd_log_det(transform, x[i], lambda v: v[:-1])
        np.testing.assert_allclose(ladj[i], expected, rtol=1e-6)
    assert transform.forward_shape((3, 4)) == (3, 5) and transform.inverse_shape((5,)) == (4,)
    with pytest.raises(ValueError, match="Too few dimensions"):
        transform.forward_shape(())


def test_softmax_transform_is_a_pseudo_inverse():
    transform = T.SoftmaxTransform()
    assert not transform.bijective
    x = RNG.normal(size=(3, 4)) * 5
    y = transform(fnn.tensor(x))
    expected = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), expected / expected.sum(-1, keepdims=True))
    np.testing.assert_allclose(transform(transform.inv(y)).numpy(), y.numpy(), rtol=1e-12)


def test_corr_cholesky_round_trip_unit_rows_and_log_jacobian():
    transform = T.CorrCholeskyTransform()
    x = RNG.normal(size=(2, 6))
    y = transform(fnn.tensor(x))
    assert y.shape == (2, 4, 4) and bool(constraints.corr_cholesky.check(y).all().item())
    np.testing.assert_allclose(np.linalg.norm(y.numpy(), axis=-1), 1.0)
    np.testing.assert_allclose(transform.inv(y).numpy(), x, rtol=1e-8)
    ladj = transform.log_abs_det_jacobian(fnn.tensor(x), y).numpy()
    rows, cols = np.tril_indices(4, -1)
    for i in range(2):  # x -> the strict lower triangle of y
        expected = _fd_log_det(transform, x[i], lambda v: v[rows, cols])
        np.testing.assert_allclose(ladj[i], expected, rtol=1e-6)
    assert transform.forward_shape((6,)) == (4, 4) and transform.inverse_shape((5, 3, 3)) == (5, 3)
    with pytest.raises(ValueError, match="flattened lower-diagonal"):
        transform.forward_shape((4,))
    with pytest.raises(ValueError, match="not square"):
        transform.inverse_shape((3, 2))


def test_lower_cholesky_and_positive_definite_transforms():
    x = RNG.normal(size=(2, 3, 3))
    lower = T.LowerCholeskyTransform()(fnn.tensor(x))
    expected = np.tril(x, -1) + np.exp(x) * np.eye(3)
    np.testing.assert_allclose(lower.numpy(), expected)
    assert bool(constraints.lower_cholesky.check(lower).all().item())
    np.testing.assert_allclose(T.LowerCholeskyTransform().inv(lower).numpy(), np.tril(x))
    pd = T.PositiveDefiniteTransform()(fnn.tensor(x))
    np.testing.assert_allclose(pd.numpy(), expected @ np.swapaxes(expected, -1, -2))
    assert bool(constraints.positive_definite.check(pd).all().item())
    np.testing.assert_allclose(T.PositiveDefiniteTransform().inv(pd).numpy(), np.tril(x),
                               atol=1e-10)


def test_reshape_and_independent_transforms():
    reshape = T.ReshapeTransform((2, 3), (6,))
    x = fnn.tensor(RNG.normal(size=(4, 2, 3)))
    y = reshape(x)
    assert y.shape == (4, 6) and reshape.inv(y).shape == (4, 2, 3)
    assert reshape.log_abs_det_jacobian(x, y).shape == (4,)
    assert reshape.domain.event_dim == 2 and reshape.codomain.event_dim == 1
    assert reshape.forward_shape((5, 2, 3)) == (5, 6) and reshape.inverse_shape((6,)) == (2, 3)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match="Shape mismatch"):
        reshape.forward_shape((3, 2))
    independent = T.IndependentTransform(T.ExpTransform(), 2)
    x = fnn.tensor(RNG.normal(size=(4, 2, 3)))
    ladj = independent.log_abs_det_jacobian(x, independent(x))
    np.testing.assert_allclose(ladj.numpy(), x.numpy().sum((-2, -1)))
    assert independent.event_dim == 2 and independent.bijective and independent.sign == 1
    np.testing.assert_allclose(independent.inv(independent(x)).numpy(), x.numpy())
    with pytest.raises(ValueError, match="Too few dimensions"):
        independent(fnn.tensor([1.0]))


def test_cat_and_stack_transforms():
    cat = T.CatTransform([T.ExpTransform(), T.identity_transform, T.SoftplusTransform()],
                         dim=-1, lengths=[2, 1, 2])
    x = RNG.normal(size=(3, 5))
    y = cat(fnn.tensor(x))
    expected = np.concatenate([np.exp(x[:, :2]), x[:, 2:3], np.log1p(np.exp(x[:, 3:]))], -1)
    np.testing.assert_allclose(y.numpy(), expected)
    np.testing.assert_allclose(cat.inv(y).numpy(), x, rtol=1e-9)
    ladj = cat.log_abs_det_jacobian(fnn.tensor(x), y).numpy()
    slope = np.concatenate([np.exp(x[:, :2]), np.ones((3, 1)), 1 / (1 + np.exp(-x[:, 3:]))], -1)
    np.testing.assert_allclose(ladj, np.log(slope))
    assert cat.bijective and cat.event_dim == 0 and cat.length == 5
    assert bool(cat.codomain.check(y).all().item())
    with pytest.raises(AssertionError, match="must equal length"):
        cat(fnn.tensor(x[:, :4]))
    with pytest.raises(AssertionError, match="lengths"):
        T.CatTransform([T.ExpTransform()], lengths=[1, 2])
    stack = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=1)
    x = RNG.normal(size=(4, 2))
    y = stack(fnn.tensor(x))
    np.testing.assert_allclose(y.numpy(), np.stack([np.exp(x[:, 0]), 1 + 3 * x[:, 1]], 1))
    np.testing.assert_allclose(stack.inv(y).numpy(), x, rtol=1e-12)
    ladj = stack.log_abs_det_jacobian(fnn.tensor(x), y).numpy()
    np.testing.assert_allclose(ladj, np.stack([x[:, 0], np.full(4, np.log(3.0))], 1))
    with pytest.raises(AssertionError, match="len\\(transforms\\)"):
        stack(fnn.tensor(RNG.normal(size=(4, 3))))


def test_caching_returns_the_very_tensors():
    for transform in (T.PowerTransform(2.0, cache_size=1),
                      T.SoftplusTransform().with_cache(1),
                      T.StickBreakingTransform(cache_size=1),
                      T.CatTransform([T.ExpTransform()], lengths=[3], cache_size=1)):
        x = fnn.tensor(RNG.uniform(0.5, 1.5, (3,)))
        y = transform(x)
        assert transform.inv(y) is x and transform(x) is y
    independent = T.IndependentTransform(T.ExpTransform(), 1).with_cache(1)
    assert independent.base_transform._cache_size == 1


def test_transforms_match_torch():
    torch = pytest.importorskip("torch")
    tt = torch.distributions.transforms
    cases = [("StickBreakingTransform", (), (3, 4)), ("SoftplusTransform", (), (3, 4)),
             ("SoftmaxTransform", (), (3, 4)), ("CorrCholeskyTransform", (), (2, 6)),
             ("LowerCholeskyTransform", (), (2, 3, 3)),
             ("PositiveDefiniteTransform", (), (2, 3, 3)), ("PowerTransform", (1.7,), (3, 4))]
    for name, args, shape in cases:
        x = RNG.uniform(0.3, 2.0, shape)
        ours, theirs = getattr(T, name)(*args), getattr(tt, name)(*args)
        y, their_y = ours(fnn.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(y.numpy(), their_y.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ours.inv(y).numpy(), theirs.inv(their_y).numpy(),
                                   rtol=1e-10, atol=1e-12)
        assert ours.domain.event_dim == theirs.domain.event_dim, name
        assert ours.codomain.event_dim == theirs.codomain.event_dim, name
        assert ours.bijective == theirs.bijective, name
        if theirs.bijective:
            np.testing.assert_allclose(
                ours.log_abs_det_jacobian(fnn.tensor(x), y).numpy(),
                theirs.log_abs_det_jacobian(torch.tensor(x), their_y).numpy(), rtol=1e-10)
        assert tuple(ours.forward_shape(shape)) == tuple(theirs.forward_shape(torch.Size(shape)))


def test_compose_event_dims_match_torch():
    torch = pytest.importorskip("torch")
    tt = torch.distributions.transforms

    def chains(t):
        return [[t.CorrCholeskyTransform()], [t.ExpTransform(), t.StickBreakingTransform()],
                [t.ReshapeTransform((4,), (2, 2)), t.ExpTransform()],
                [t.StickBreakingTransform(), t.ReshapeTransform((4,), (2, 2))],
                [t.ExpTransform(), t.IndependentTransform(t.SigmoidTransform(), 1)]]

    for ours, theirs in zip(chains(T), chains(tt)):
        ours, theirs = T.ComposeTransform(ours), tt.ComposeTransform(theirs)
        assert ours.domain.event_dim == theirs.domain.event_dim
        assert ours.codomain.event_dim == theirs.codomain.event_dim


def test_tril_vector_helpers_and_identity_transform():
    vec = RNG.normal(size=(2, 6))
    matrix = vec_to_tril_matrix(fnn.tensor(vec), diag=-1).numpy()
    rows, cols = np.tril_indices(4, -1)
    np.testing.assert_array_equal(matrix[:, rows, cols], vec)
    assert np.all(np.triu(matrix) == 0)
    np.testing.assert_array_equal(tril_matrix_to_vec(fnn.tensor(matrix), -1).numpy(), vec)
    with pytest.raises(ValueError, match="cannot be expressed"):
        vec_to_tril_matrix(fnn.tensor(RNG.normal(size=(4,))))
    with pytest.raises(ValueError, match="outside"):
        tril_matrix_to_vec(fnn.tensor(matrix), diag=4)
    x = fnn.tensor(vec)
    assert T.identity_transform(x) is x and fd.identity_transform is T.identity_transform
    assert T.identity_transform.log_abs_det_jacobian(x, x).shape == (2, 6)


def test_biject_to_and_transform_to():
    x = fnn.tensor(RNG.normal(size=(3, 4)))
    for constraint in (constraints.positive, constraints.greater_than(2.0),
                       constraints.less_than(-1.0), constraints.interval(-2.0, 3.0),
                       constraints.unit_interval, constraints.real, constraints.simplex,
                       constraints.real_vector, constraints.independent(constraints.positive, 1),
                       constraints.cat([constraints.positive, constraints.real], -1, [2, 2]),
                       constraints.stack([constraints.positive] * 4, -1)):
        for registry in (fd.biject_to, fd.transform_to):
            transform = registry(constraint)
            y = transform(x)
            assert bool(constraint.check(y).all().item()), (constraint, registry)
            if registry is fd.biject_to:
                assert transform.bijective
                np.testing.assert_allclose(transform.inv(y).numpy(), x.numpy(), rtol=1e-6,
                                           atol=1e-6)
    assert isinstance(fd.biject_to(constraints.simplex), T.StickBreakingTransform)
    assert isinstance(fd.transform_to(constraints.simplex), T.SoftmaxTransform)
    assert isinstance(fd.biject_to(constraints.corr_cholesky), T.CorrCholeskyTransform)
    assert isinstance(fd.transform_to(constraints.positive_definite),
                      T.PositiveDefiniteTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean"):
        fd.biject_to(constraints.boolean)
    with pytest.raises(NotImplementedError):
        fd.biject_to(constraints.lower_cholesky)  # only transform_to has one, as torch
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        fd.transform_to.register(int, lambda c: T.ExpTransform())
