"""Views share storage and writes alias, as in PyTorch, on every backend: cpu and opencl
write through their strided views (the ``assign`` hook), and a backend that knows only
contiguous arrays ("copying", below: every view hook returns a copy, no ``assign``) is kept
right by the core's write-back composite. In-place ops and augmented assignment write in
place, are recorded on the tape, and the write clock catches a backward through an
overwritten value."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.fake_backends import forget, install_backend
from tests.ops.conftest import DEVICES

COPYING = """
from fastnn_cpu import *  # noqa: F401,F403
from fastnn_cpu.conv import *  # noqa: F401,F403
from fastnn_cpu.conv_2d import *  # noqa: F401,F403
from fastnn_cpu.fused import *  # noqa: F401,F403
from fastnn_cpu.indexing import *  # noqa: F401,F403
from fastnn_cpu.optim import *  # noqa: F401,F403
from fastnn_cpu import backend_probe as _probe
import fastnn_cpu.indexing as _ix
import numpy as _np
from fastnn.api.hookspec import hookimpl

del assign  # contiguous arrays only: the core must write back itself
fastnn_hook_modules = []


@hookimpl
def backend_probe():
    info = dict(_probe())
    info["devices"] = ["copying host"]
    return info


@hookimpl
def slice(x, starts, stops, steps):
    return _np.array(_ix.slice(x, starts, stops, steps), copy=True)


@hookimpl
def reshape(x, shape):
    return _np.array(_np.reshape(x, shape), copy=True)


@hookimpl
def transpose(x, axes):
    return _np.ascontiguousarray(_np.transpose(x, axes)).copy()


@hookimpl
def broadcast_to(x, shape):
    return _np.array(_np.broadcast_to(x, shape), copy=True)
"""


@pytest.fixture(scope="module")
def copying(tmp_path_factory):
    install_backend(tmp_path_factory.mktemp("copying"), "fastnn-backend-copying", "copying",
                    "fastnn_copying", COPYING)
    yield "copying"
    forget()


@pytest.fixture(params=DEVICES + ["copying"])
def dev(request):
    if request.param == "copying":
        return request.getfixturevalue("copying")
    return request.param


def _grid(dev, shape=(3, 4), dtype=fnn.float32):
    host = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    return fnn.tensor(host, dtype=dtype, device=dev), host.astype(dtype.numpy)


# each case: make a view of x (fastnn) and of a (NumPy), then write through it
VIEWS = {
    "basic index": (lambda x: x[1], lambda a: a[1]),
    "slice with step": (lambda x: x[:, ::2], lambda a: a[:, ::2]),
    "view(-1)": (lambda x: x.view(-1), lambda a: a.reshape(-1)),
    "view(2, 6)": (lambda x: x.view(2, 6), lambda a: a.reshape(2, 6)),
    "reshape": (lambda x: x.reshape(6, 2), lambda a: a.reshape(6, 2)),
    "T": (lambda x: x.T, lambda a: a.T),
    "mT": (lambda x: x.mT, lambda a: a.T),
    "transpose": (lambda x: x.transpose(0, 1), lambda a: a.T),
    "permute": (lambda x: x.permute(1, 0), lambda a: a.T),
    "narrow": (lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "select": (lambda x: x.select(1, 2), lambda a: a[:, 2]),
    "unbind": (lambda x: x.unbind(0)[2], lambda a: a[2]),
    "split": (lambda x: x.split(2, dim=1)[1], lambda a: a[:, 2:4]),
    "chunk": (lambda x: x.chunk(3, 0)[1], lambda a: a[1:2]),
    "diagonal": (lambda x: x.diagonal(), lambda a: np.einsum("ii->i", a[:, :3])),
    "diagonal offset": (lambda x: x.diagonal(1), lambda a: a[[0, 1, 2], [1, 2, 3]]),
    "unflatten": (lambda x: x.unflatten(1, (2, 2)), lambda a: a.reshape(3, 2, 2)),
    "unsqueeze": (lambda x: x.unsqueeze(0), lambda a: a[None]),
    "squeeze": (lambda x: x[None].squeeze(0), lambda a: a),
    "detach": (lambda x: x.detach(), lambda a: a),
    "data": (lambda x: x.data, lambda a: a),
    "view of a view": (lambda x: x.T[1:3], lambda a: a.T[1:3]),
    # the no-op views: new tensors (as PyTorch's), still views of x's storage
    "view(same shape)": (lambda x: x.view(x.shape), lambda a: a),
    "x[...]": (lambda x: x[...], lambda a: a),
    "x[:]": (lambda x: x[:], lambda a: a),
    "squeeze() of nothing": (lambda x: x.squeeze(), lambda a: a),
    "expand(same shape)": (lambda x: x.expand(3, 4), lambda a: a),
    "narrow(all)": (lambda x: x.narrow(0, 0, 3), lambda a: a),
    "T then flatten last": (lambda x: x.T.unflatten(0, (2, 2))[1], lambda a: a.T.reshape(
        2, 2, 3)[1]),
}


@pytest.mark.parametrize("case", sorted(VIEWS))
def test_a_write_through_any_view_reaches_the_base_and_other_views(dev, case):
    make, ref = VIEWS[case]
    x, a = _grid(dev)
    other = x[:, 1:]  # a second view: it must see the write too
    v = make(x)
    v.fill_(-5.0)
    if case == "diagonal offset":
        a[[0, 1, 2], [1, 2, 3]] = -5.0
    elif case == "diagonal":
        np.fill_diagonal(a, -5.0)
    else:
        ref(a)[...] = -5.0
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(other.numpy(), a[:, 1:])
    np.testing.assert_array_equal(v.numpy(), np.full(v.shape, -5.0, np.float32))


def test_index_assignment_through_chains_of_views(dev):
    x, a = _grid(dev)
    x[0][1] = 9.0          # x[0] is a view: its item write reaches x
    v = x[2]
    v[3] = 7.0
    x.view(-1)[0] = -1.0
    x[1, 1:3] = fnn.tensor([20.0, 30.0], device=dev)
    x[[0, 2], 3] = fnn.tensor([40.0, 50.0], device=dev)  # advanced: a scatter
    x[x < 2] = 100.0                                        # a mask like x
    a[0][1] = 9.0
    a[2][3] = 7.0
    a.reshape(-1)[0] = -1.0
    a[1, 1:3] = [20.0, 30.0]
    a[[0, 2], 3] = [40.0, 50.0]
    a[a < 2] = 100.0
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(v.numpy(), a[2])


def test_augmented_assignment_writes_in_place(dev):
    x, a = _grid(dev)
    alias, row = x, x[1]
    x += 1
    x *= 2
    x -= fnn.ones((4,), device=dev)
    x /= 4
    assert x is alias
    expected = ((a + 1) * 2 - 1) / 4
    np.testing.assert_allclose(alias.numpy(), expected)
    np.testing.assert_allclose(row.numpy(), expected[1])
    n = fnn.tensor([5, 7], device=dev)
    same = n
    n //= 2
    n %= 2
    assert same.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="can't be cast"):
        n /= 2  # int64 /= 2 would be float, as torch refuses


def test_underscore_methods_match_numpy(dev):
    x, a = _grid(dev)
    y = fnn.tensor(np.full((3, 4), 2.0), dtype=fnn.float32, device=dev)
    assert x.add_(y, alpha=3) is x
    a = a + 3 * 2.0
    x.mul_(0.5).sub_(1.0).clamp_(min=0.0, max=6.0).sqrt_()
    a = np.sqrt(np.clip(a * 0.5 - 1.0, 0.0, 6.0))
    np.testing.assert_allclose(x.numpy(), a, rtol=1e-6)
    mask = fnn.tensor(a > 2.0, device=dev)
    x.masked_fill_(mask, -1.0)
    a[a > 2.0] = -1.0
    np.testing.assert_allclose(x.numpy(), a, rtol=1e-6)
    x.zero_()
    assert not x.numpy().any()
    x.copy_(fnn.tensor(np.arange(4.0), device=dev))  # broadcast, float64 -> float32
    np.testing.assert_array_equal(x.numpy(), np.tile(np.arange(4.0), (3, 1)))
    index = fnn.tensor([0, 2], device=dev)
    x.index_add_(0, index, fnn.ones((2, 4), device=dev))
    x.index_fill_(1, fnn.tensor([3], device=dev), 8.0)
    b = np.tile(np.arange(4.0), (3, 1))
    b[[0, 2]] += 1
    b[:, 3] = 8.0
    np.testing.assert_array_equal(x.numpy(), b)
    x.lerp_(fnn.zeros((3, 4), device=dev), 0.5).addcmul_(x, x, value=2.0)
    b = b * 0.5
    b = b + 2.0 * b * b
    np.testing.assert_allclose(x.numpy(), b, rtol=1e-6)


def test_random_fills_write_in_place_and_follow_the_seed(dev):
    x = fnn.zeros((200,), device=dev)
    view = x[100:]
    fnn.manual_seed(3)
    x.uniform_(-2.0, 2.0)
    values = x.numpy().copy()
    assert -2.0 <= values.min() and values.max() < 2.0 and values.std() > 0.5
    np.testing.assert_array_equal(view.numpy(), values[100:])
    fnn.manual_seed(3)
    y = fnn.zeros((200,), device=dev).uniform_(-2.0, 2.0)
    np.testing.assert_array_equal(y.numpy(), values)
    x.normal_(10.0, 0.1)
    assert abs(x.numpy().mean() - 10.0) < 0.1
    x.bernoulli_(0.25)
    assert set(np.unique(x.numpy())) <= {0.0, 1.0}


def test_a_write_into_an_expanded_view_is_refused(dev):
    x = fnn.zeros((1, 3), device=dev)
    with pytest.raises(RuntimeError, match="single memory location"):
        x.expand(4, 3).fill_(1.0)


def test_strides_offsets_and_contiguity_are_pytorchs(dev):
    x, _ = _grid(dev, (2, 3, 4))
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    t = x.transpose(0, 2)
    assert t.stride() == (1, 4, 12) and not t.is_contiguous()
    assert x[1, :, 2:].storage_offset() == 14 and x[1, :, 2:].stride() == (4, 1)
    assert x.expand(5, 2, 3, 4).stride() == (0, 12, 4, 1)
    assert t.contiguous().is_contiguous() and t.contiguous().stride() == (6, 2, 1)
    assert x.contiguous() is x
    assert x[0].data_ptr() == x.data_ptr() and x[1].data_ptr() != x.data_ptr()
    assert x[1]._base is x and x._base is None


def test_reshape_copies_only_where_no_view_exists(dev):
    x, a = _grid(dev)
    flat = x.T.reshape(-1)        # not viewable: a copy, as PyTorch's
    flat.fill_(0.0)
    np.testing.assert_array_equal(x.numpy(), a)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.T.view(-1)
    split = x.T.reshape(2, 2, 3)  # splitting a dim of a transpose is a view
    split[0, 0, 0] = 99.0
    assert x.numpy()[0, 0] == 99.0


def test_numpy_and_from_numpy_share_memory_on_cpu():
    x = fnn.zeros((3,))
    host = x.numpy()
    x[1] = 4.0
    assert host[1] == 4.0


# ---------------------------------------------------------------- autograd


def test_inplace_on_a_leaf_that_requires_grad_is_refused_outside_no_grad(dev):
    w = fnn.ones((3,), device=dev, requires_grad=True)
    for write in (lambda: w.add_(1.0), lambda: w.__iadd__(1.0), lambda: w[0].fill_(2.0),
                  lambda: w.__setitem__(0, 2.0)):
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
            write()
    with fnn.no_grad():
        w -= 0.5
        w[0] = 3.0
    np.testing.assert_array_equal(w.numpy(), [3.0, 0.5, 0.5])
    w.data.mul_(2.0)  # .data: the storage without history, as PyTorch's
    np.testing.assert_array_equal(w.numpy(), [6.0, 1.0, 1.0])


def test_data_set_to_itself_is_a_no_op_and_to_another_view_of_it_refused(dev):
    """``p.data = p.data`` (what ``p.data = p.data.float()`` or ``.contiguous()`` gives
    back for a float32 p) leaves p as it was, writable and aliasing as before (it made p
    its own parent: every later write recursed without end); a view of p's own storage in
    another layout is refused with the fix (PyTorch re-lays p; fastnn cannot)."""
    p = fnn.nn.Parameter(fnn.ones((2, 3), device=dev))
    v = p[0]
    for same in (lambda: p.data, lambda: p.data.float(), lambda: p.data.contiguous(),
                 lambda: p):
        p.data = same()
    v.data = v.detach()
    with fnn.no_grad():
        p.copy_(fnn.arange(6.0, device=dev).reshape(2, 3))
    np.testing.assert_array_equal(p.numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])  # still a view of p
    assert isinstance(p, fnn.nn.Parameter) and p.requires_grad and p.shape == (2, 3)
    for other in (lambda: p.data[0], lambda: p.data.t(), lambda: p.data.view(6)):
        with pytest.raises(ValueError, match="another view of x's own storage.*clone"):
            p.data = other()
    p.data = p.data.t().clone()  # a copy is its own storage, as the message says
    assert p.shape == (3, 2)
    np.testing.assert_array_equal(p.numpy(), np.arange(6.0).reshape(2, 3).T)


def test_backward_through_an_overwritten_saved_value_raises_naming_the_op(dev):
    a = fnn.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
    b = a * 2
    c = b * b          # mul saves b
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*'mul'"):
        c.sum().backward()
    e = a.exp()        # exp saves its output
    e[0] = 0.0
    with pytest.raises(RuntimeError, match="output of 'exp'"):
        e.sum().backward()
    x = a * 1.0
    y = x.exp()        # ...and not its input: writing x afterwards is fine, as in PyTorch
    x.add_(1.0)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_inplace_ops_are_recorded_as_pytorch_records_them(dev):
    torch = pytest.importorskip("torch")
    host = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    w_host = np.array([1.5, 2.0, -0.5], dtype=np.float32)

    def run(lib, make, **on):
        a, w = make(host), make(w_host)
        b = a * 1.0
        kept = b + 1.0          # recorded before the writes: its gradient stays b's old path
        b.mul_(w)
        b += a
        b.tanh_()
        buf = lib.zeros((2, 3), **on)
        buf[0] = b * 2.0          # a write of a value with history into a plain tensor
        buf[1, 1:] = w[:2]
        row = buf[1]
        row.mul_(3.0)             # through a view of a non-leaf: the base's history grows
        loss = (buf * buf).sum() + kept.sum()
        loss.backward()
        return a.grad, w.grad

    theirs = run(torch, lambda h: torch.tensor(h, requires_grad=True))
    ours = run(fnn, lambda h: fnn.tensor(h, device=dev, requires_grad=True), device=dev)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_gradients_of_leaves_are_their_own_storage(dev):
    a = fnn.ones((3,), device=dev, requires_grad=True)
    b = fnn.ones((3,), device=dev, requires_grad=True)
    (a + b).sum().backward()       # one gradient array reaches both leaves
    a.grad.zero_()
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 1.0])
    b.grad += 1.0
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0, 0.0])


def test_out_writes_into_the_given_tensor_as_pytorch(dev):
    a = fnn.tensor(np.arange(6.0).reshape(2, 3), device=dev)
    out = fnn.zeros((2, 3), device=dev)
    row = out[1]
    assert fnn.add(a, 1.0, out=out) is out
    np.testing.assert_array_equal(row.numpy(), [4.0, 5.0, 6.0])
    grown = fnn.zeros((0,), device=dev)
    fnn.matmul(a, a.T, out=grown)  # resized, as PyTorch resizes an empty out
    np.testing.assert_allclose(grown.numpy(), np.arange(6.0).reshape(2, 3) @
                               np.arange(6.0).reshape(2, 3).T)
    fnn.cat([a, a], dim=0, out=grown)
    assert grown.shape == (4, 3)
    w = fnn.ones((3,), device=dev, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        fnn.mul(w, 2.0, out=fnn.zeros((3,), device=dev))


def test_views_of_results_a_hook_returned_non_contiguous_alias(dev):
    # cpu's conv1d returns a transposed view of its GEMM's buffer, and elementwise ops keep
    # that layout: views of such results must still alias, as PyTorch's do
    x = fnn.tensor(np.random.default_rng(0).standard_normal((2, 3, 8)), dtype=fnn.float32,
                   device=dev)
    w = fnn.tensor(np.random.default_rng(1).standard_normal((4, 3, 3)), dtype=fnn.float32,
                   device=dev)
    y = fnn.functional.conv1d(x, w)
    y.view(-1)[0] = 123.0
    assert y.numpy()[0, 0, 0] == 123.0
    z = fnn.functional.relu(fnn.functional.conv1d(x, w))
    z.unsqueeze(1)[1, 0, 2, 3] = -1.0      # a unit-dim view first
    z[1].reshape(-1)[0] = 55.0             # then a slice reshaped
    z.view(2, -1)[0, 1] = 66.0
    host = z.numpy()
    assert host[1, 2, 3] == -1.0 and host[1, 0, 0] == 55.0 and host[0, 0, 1] == 66.0


def test_a_factor_whose_partner_needs_no_gradient_may_be_written_afterwards(dev):
    """As PyTorch's mul, each factor is kept only for the other's gradient: x * const
    keeps const, not x, so x may then be written in place (torch allows it too); a
    factor whose partner needs a gradient is still checked."""
    a = fnn.tensor([1.0, 2.0, 3.0], device=dev, requires_grad=True)
    x = a * 2
    y = x * fnn.tensor([5.0, 6.0, 7.0], device=dev)  # keeps the constant only
    x.add_(1.0)
    (y.sum() + (x * x).sum()).backward()  # x is 2a + 1 now
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.array([5.0, 6.0, 7.0])
                               + 2 * 2 * (2 * np.array([1.0, 2.0, 3.0]) + 1))
    b = fnn.tensor([1.0, 2.0], device=dev, requires_grad=True)
    c = fnn.tensor([3.0, 4.0], device=dev, requires_grad=True)
    u, v = b * 1.0, c * 1.0
    w = u * v  # both need gradients: both kept
    u.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*'mul'"):
        w.sum().backward()


def test_a_where_operand_may_be_written_afterwards_as_where_keeps_only_its_condition(dev):
    """x[x < 0] = 0 on a non-leaf, then more: PyTorch's where keeps the condition only."""
    a = fnn.tensor([-1.0, 2.0, -3.0, 4.0], device=dev, requires_grad=True)
    h = a * 3.0
    y = fnn.where(h > 0, h, fnn.zeros(4, device=dev))  # keeps h > 0, not h
    h[h < 0] = 0.0
    h.mul_(2.0)
    (y * y).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 36.0, 0.0, 72.0])
    cond = a > 0
    z = fnn.where(cond, a * 1.0, 0.0)
    cond.logical_not_()
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*'where'"):
        z.sum().backward()
