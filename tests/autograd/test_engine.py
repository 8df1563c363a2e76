"""The tape: accumulation, shared inputs, deep graphs, freeing, no_grad, anomaly mode."""

import gc
import threading
import weakref

import numpy as np
import pytest

import fastnn as fnn


def test_gradients_accumulate_into_leaves():
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 + 3, 4 + 3])
    x.zero_grad()
    assert x.grad is None


def test_shared_inputs_are_summed():
    x = fnn.tensor([0.5, -1.5], requires_grad=True)
    y = x * 2.0
    z = (y * y + y.exp() + y).sum()  # y used three times, x twice more below
    (z + (x * x).sum()).backward()
    xv = np.array([0.5, -1.5])
    yv = 2 * xv
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * yv + np.exp(yv) + 1) + 2 * xv, rtol=1e-6)


def test_diamond_graph_visits_each_node_once():
    x = fnn.tensor([2.0], requires_grad=True)
    a = x * 3.0
    b = a + a
    c = b * a
    c.sum().backward()  # c = 2a * a = 18 x^2 -> 36 x
    np.testing.assert_allclose(x.grad.numpy(), [72.0])


def test_chain_of_100000_ops_does_not_recurse():
    x = fnn.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])


def test_graph_is_freed_after_backward():
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    node, product = y._node, y._node.parents[0]
    y.backward()
    assert product.inputs is None and product.saved is None  # mul saved x: freed
    # sum saved nothing: it keeps its input's metadata, not the tensor (PyTorch's rule)
    assert not any(isinstance(t, fnn.Tensor) for t in node.inputs)
    with pytest.raises(RuntimeError, match="second time .at 'mul'"):
        y.backward()


def test_a_second_backward_through_nodes_that_saved_nothing_runs_as_in_pytorch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.ones(3, requires_grad=True)
        first = x[0]  # select, then (below) add, a view and sum: none saves a tensor
        first.backward()
        first.backward()
        y = (x + 1).view(3, 1).sum()
        y.backward()
        y.backward()
        z = (x * x).sum()  # mul saved x: a second backward raises in both
        z.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            z.backward()
        return x.grad.numpy()

    np.testing.assert_array_equal(run(fnn), run(torch))


def test_a_released_node_keeps_no_intermediate_tensor_alive():
    x = fnn.ones(3, requires_grad=True)
    h = x + 0.5
    ref = weakref.ref(h)
    y = (h + 1).sum()
    y.backward()
    del h
    gc.collect()
    assert ref() is None  # add and sum kept its metadata only
    y.backward()  # and still run
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_non_scalar_backward_needs_a_gradient():
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match=r"scalar output, got shape \(2,\)"):
        y.backward()
    y.backward(fnn.tensor([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])
    with pytest.raises(ValueError, match=r"grad has shape \(3,\)"):
        (x * 2.0).backward(fnn.ones((3,)))
    with pytest.raises(RuntimeError, match="does not require grad"):
        fnn.ones((1,)).backward()


def test_no_grad_context_and_decorator():
    x = fnn.tensor([1.0], requires_grad=True)
    with fnn.no_grad():
        assert not (x * 2.0).requires_grad
        with fnn.enable_grad():
            assert (x * 2.0).requires_grad
    assert (x * 2.0).requires_grad

    @fnn.no_grad()
    def f(t):
        return t * 2.0

    assert not f(x).requires_grad and fnn.is_grad_enabled()


def test_no_grad_is_thread_local():
    x = fnn.tensor([1.0], requires_grad=True)
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def worker():
        with fnn.no_grad():
            inside.set()
            done.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    seen["main"] = (x * 2.0).requires_grad
    done.set()
    thread.join()
    assert seen["main"] is True


def test_detect_anomaly_names_the_op():
    x = fnn.tensor([-1.0, 1.0], requires_grad=True)
    with fnn.detect_anomaly():
        with pytest.raises(FloatingPointError, match="forward of 'log'"):
            x.log()
        z = fnn.tensor([0.0, 1.0], requires_grad=True)
        y = z.sqrt().sum()  # forward fine; backward divides by 0
        with pytest.raises(FloatingPointError, match="backward of 'sqrt'"):
            y.backward()
    assert np.isnan(x.log().numpy()[0])  # outside anomaly mode: no error


def test_detach_and_leaf_flags():
    x = fnn.tensor([1.0], requires_grad=True)
    y = x * 2.0
    assert x.is_leaf and not y.is_leaf and y.requires_grad
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_allclose(d.numpy(), y.numpy())


def test_only_a_leafs_requires_grad_can_be_turned_off():
    """As PyTorch: turning the flag off on a result of the tape raises (it would not cut
    the tape), on it again is a no-op, and a leaf's flag goes either way."""
    x = fnn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="only a leaf's flag.*detach"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="only a leaf's flag"):
        y.requires_grad = False
    assert y.requires_grad_(True) is y and y.requires_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])  # d(4x^2)/dx
    x.requires_grad_(False)
    assert not x.requires_grad and x.is_leaf


def test_shared_intermediate_waits_for_all_consumers():
    # d is consumed twice and x three times through paths of different depths; a
    # depth-first order that marks nodes when first seen runs d's rule too early.
    from tests.helpers import finite_difference, tape_grads

    def ref(x):
        d = x - x.mean(axis=-1, keepdims=True)
        return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)

    def fn(x):
        d = x - x.mean(axis=-1, keepdims=True)
        return d / ((d * d).mean(axis=-1, keepdims=True) + 1e-5).sqrt()

    x = np.random.default_rng(3).standard_normal((3, 5))
    expected, weights = finite_difference(ref, [x], 0)
    (got,) = tape_grads(fn, [x], weights)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
