"""Run one op in fastnn and in PyTorch on the same inputs; compare values, dtypes, shapes and
the gradients of sum(out * w) (w random, the same in both)."""

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")


def _leaves(arrays, make, transposed):
    out = []
    for a in arrays:
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        grad = a.dtype.kind == "f"
        if transposed and a.ndim >= 2:
            t = make(np.ascontiguousarray(a.T), grad)
            # the op reads a non-contiguous view (dims reversed); the leaf is t
            out.append((t, t.permute(*reversed(range(t.ndim)))))
        else:
            t = make(a, grad)
            out.append((t, t))
    return out


def _flat(result):
    if isinstance(result, (tuple, list)):
        return [r for item in result for r in _flat(item)]
    return [result]


def compare(run, ref, *arrays, grad=True, transposed=False, atol=1e-10, seed=0):
    """``run(*fastnn tensors)`` against ``ref(*torch tensors)``; float arrays are leaves
    that require grad, other arguments pass through as they are."""
    mine = _leaves(arrays, lambda a, g: fnn.tensor(a, requires_grad=g), transposed)
    theirs = _leaves(arrays, lambda a, g: torch.tensor(a, requires_grad=g), transposed)
    got = _flat(run(*[m[1] if isinstance(m, tuple) else m for m in mine]))
    want = _flat(ref(*[t[1] if isinstance(t, tuple) else t for t in theirs]))
    assert len(got) == len(want)
    rng = np.random.default_rng(seed)
    mine_sum, theirs_sum = None, None
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), (g.shape, w.shape)
        assert str(g.dtype).rpartition(".")[2] == str(w.dtype).rpartition(".")[2], \
            (g.dtype, w.dtype)
        np.testing.assert_allclose(g.numpy().astype(np.float64) if g.dtype != fnn.bool else
                                   g.numpy(), w.detach().numpy(), atol=atol, rtol=1e-9)
        if grad and w.requires_grad and g.requires_grad:
            weight = rng.normal(size=tuple(w.shape))
            a = (g * fnn.tensor(weight)).sum()
            b = (w * torch.tensor(weight)).sum()
            mine_sum = a if mine_sum is None else mine_sum + a
            theirs_sum = b if theirs_sum is None else theirs_sum + b
    if mine_sum is None:
        return got
    mine_sum.backward()
    theirs_sum.backward()
    for m, t in zip(mine, theirs):
        if isinstance(m, tuple) and t[0].requires_grad:
            want_grad = t[0].grad
            got_grad = m[0].grad
            if want_grad is None or got_grad is None:  # no path: torch may give zeros
                for g in (want_grad, got_grad):
                    assert g is None or not np.any(np.asarray(g.numpy())), "one-sided grad"
                continue
            np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), atol=atol,
                                       rtol=1e-9)
    return got


def second_order(lib, fn, arrays):
    """d/dx sum(grad(sum(fn(x) * w), x) * v) under ``lib`` (fastnn or torch): gradients of
    gradients, for comparing create_graph's results."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *leaves)
    weight = lib.tensor(np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape)))
    grads = lib.autograd.grad((out * weight).sum(), leaves, create_graph=True)
    total = sum((g * lib.tensor(np.cos(np.arange(g.numel())).reshape(tuple(g.shape)))).sum()
                for g in grads)
    total.backward()
    return [leaf.grad.numpy() for leaf in leaves]
