"""no_grad/enable_grad as decorators: recursion, threads and bare use restore the mode."""

import threading

import numpy as np

import fastnn as fnn


def test_recursive_no_grad_function_restores_grad_mode():
    @fnn.no_grad()
    def descend(n):
        if n:
            descend(n - 1)
        return fnn.is_grad_enabled()

    assert descend(3) is False
    assert fnn.is_grad_enabled()
    x = fnn.tensor([2.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0])


def test_reused_context_object_nests():
    switch = fnn.no_grad()
    with switch:
        with switch:
            assert not fnn.is_grad_enabled()
        assert not fnn.is_grad_enabled()
    assert fnn.is_grad_enabled()


def test_shared_decorator_in_two_threads_keeps_each_threads_mode():
    inside, release = threading.Barrier(2), threading.Event()
    after = {}

    @fnn.no_grad()
    def hold(name):
        inside.wait()
        if name == "a":
            release.wait()
        else:
            release.set()

    def worker(name, start_enabled):
        if not start_enabled:
            with fnn.no_grad():
                hold(name)
                after[name] = fnn.is_grad_enabled()
            return
        hold(name)
        after[name] = fnn.is_grad_enabled()

    threads = [threading.Thread(target=worker, args=("a", True)),
               threading.Thread(target=worker, args=("b", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert after == {"a": True, "b": False}


def test_bare_decorator_as_in_pytorch():
    @fnn.no_grad
    def double(x):
        return x * 2.0

    x = fnn.tensor([1.0], requires_grad=True)
    assert not double(x).requires_grad
    assert (x * 2.0).requires_grad


def test_set_grad_enabled_as_function_context_and_decorator_as_torch():
    torch = __import__("pytest").importorskip("torch")
    for lib in (fnn, torch):
        lib.set_grad_enabled(False)  # at once, until changed back
        assert not lib.is_grad_enabled()
        lib.set_grad_enabled(True)
        with lib.set_grad_enabled(False):
            assert not lib.is_grad_enabled()
            with lib.set_grad_enabled(True):
                assert lib.is_grad_enabled()
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()

        @lib.set_grad_enabled(False)
        def inside(lib=lib):
            return lib.is_grad_enabled()

        assert lib.is_grad_enabled() and inside() is False and lib.is_grad_enabled()
    x = fnn.tensor([2.0], requires_grad=True)
    with fnn.set_grad_enabled(False):
        assert not (x * x).requires_grad
    assert (x * x).requires_grad


def test_set_grad_enabled_refuses_a_non_bool():
    import pytest

    with pytest.raises(TypeError, match="set_grad_enabled: mode must be True or False"):
        fnn.set_grad_enabled("no")
    assert fnn.is_grad_enabled()
