"""In-place writes and the tape, as PyTorch's, on every backend (the copying one too):
leaves that require grad refuse them outside no_grad, ``.data`` assignment, the write
clock that catches a backward through an overwritten saved value, and what each op keeps
(so that the writes PyTorch allows pass)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.helpers import outcomes_as_torch


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


def test_writes_through_data_are_not_seen_by_autograd_as_pytorch(dev):
    """x.data has a version counter of its own in PyTorch: a write through it (or a view
    of it) after x was saved raises nothing, and the backward reads the new values;
    detach() shares x's counter and raises."""
    torch = pytest.importorskip("torch")

    def run(lib, make):
        x = make([1.0, 2.0, 3.0])
        y = x * x
        s = x.sigmoid()
        version = x._version
        x.data.mul_(2.0)
        x.data[0] = 5.0
        s.data.add_(1.0)
        (y.sum() + s.sum()).backward()
        assert x._version == version
        z = x * x
        x.detach().mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an in.?place operation"):
            z.sum().backward()
        return x.grad.numpy()

    want = run(torch, lambda v: torch.tensor(v, requires_grad=True))
    if dev == "copying":  # a backend without views: the saved arrays are the old ones
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            run(fnn, lambda v: fnn.tensor(v, device=dev, requires_grad=True))
        return
    got = run(fnn, lambda v: fnn.tensor(v, device=dev, requires_grad=True))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_view_made_under_no_grad_written_with_grad_on_is_refused_as_pytorch(dev):
    """PyTorch forbids it as ambiguous (tracked or not?): fastnn wrote the values and kept
    the old history, so the base's gradient missed the write."""
    torch = pytest.importorskip("torch")
    for lib, on in ((torch, {}), (fnn, {"device": dev})):
        h = lib.ones(2, requires_grad=True, **on) * 2.0
        with lib.no_grad():
            v = h[0:1]
            w = h.view(2)
        for write in (lambda v, w: v.mul_(3.0), lambda v, w: w.__setitem__(0, 3.0),
                      lambda v, w: w[1:].zero_()):
            with pytest.raises(RuntimeError, match="created in no_grad mode"):
                write(v, w)
        with lib.no_grad():
            v.mul_(3.0)  # both under no_grad: allowed, not tracked
        h.detach()[0:1].mul_(2.0)  # a detached view: allowed
        np.testing.assert_array_equal(h.detach().numpy(), [12.0, 2.0])


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


# a view made before a write through its base or through another view of the base:
# PyTorch regenerates the view's grad_fn, so its gradient includes the write
VIEW_THEN_WRITE = {
    "base written": lambda a: (a[0], a.mul_(3.0)),
    "sibling written": lambda a: (a[0], a[:, 0].mul_(3.0)),
    "view of a view written": lambda a: (a[:], a[:][..., 1].mul_(-2.0)),
    "reshape written through": lambda a: (a.view(8), a[1].mul_(3.0)),
    "transposed": lambda a: (a.transpose(0, 1), a.transpose(0, 1)[0].mul_(3.0)),
    "nested": lambda a: (a[1][2:], a[1, 3].mul_(5.0)),
}


@pytest.mark.parametrize("case", sorted(VIEW_THEN_WRITE))
def test_a_view_made_before_a_write_sees_it_in_its_gradient(dev, case):
    torch = pytest.importorskip("torch")
    host = np.arange(1.0, 9.0, dtype=np.float32).reshape(2, 4)

    def run(lib, x):
        view, _ = VIEW_THEN_WRITE[case](x * 2.0)
        (view * view).sum().backward()
        return x.grad

    want = run(torch, torch.tensor(host, requires_grad=True))
    got = run(fnn, fnn.tensor(host, device=dev, requires_grad=True))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# writes whose values read none of the old ones: the old history gets zeros in PyTorch
# (ZeroBackward0 ...), so a leaf behind it ends with a zero .grad, not None (an optimizer
# skips a parameter whose .grad is None: no weight decay)
OVERWRITE = {
    "zero_": lambda lib, a, src: a.zero_(),
    "fill_": lambda lib, a, src: a.fill_(1.5),
    "fill_ with a 0-d tensor": lambda lib, a, src: a.fill_(src.sum()),
    "copy_ of a constant": lambda lib, a, src: a.copy_(lib.ones(2, 3)),
    "copy_ broadcast": lambda lib, a, src: a.copy_(src[0] * 3.0),
    "uniform_": lambda lib, a, src: a.uniform_(),
    "normal_": lambda lib, a, src: a.normal_(),
    "bernoulli_": lambda lib, a, src: a.bernoulli_(0.5),
}


@pytest.mark.parametrize("case", sorted(OVERWRITE))
def test_an_overwrite_of_a_non_leaf_gives_its_history_zeros(dev, case):
    torch = pytest.importorskip("torch")
    host = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)

    def run(lib, x, src):
        a = x * 2.0
        OVERWRITE[case](lib, a, src)
        (a * (a.detach() * 0 + 2.0)).sum().backward()
        grads = [None if t.grad is None else t.grad.numpy() for t in (x, src)]
        return grads, a.grad_fn.name().split("::")[-1][:4]

    want = run(torch, torch.tensor(host, requires_grad=True),
               torch.tensor(host, requires_grad=True))
    got = run(fnn, fnn.tensor(host, device=dev, requires_grad=True),
              fnn.tensor(host, device=dev, requires_grad=True))
    assert got[1] == want[1]
    for ours, theirs in zip(got[0], want[0]):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_a_step_after_zeroing_a_non_leaf_decays_the_parameter_as_pytorch(dev):
    torch = pytest.importorskip("torch")

    def run(lib, w):
        opt = lib.optim.SGD([w], lr=0.1, weight_decay=0.5)
        a = w * 2.0
        a.zero_()
        a.sum().backward()
        opt.step()
        return w.detach().numpy()

    want = run(torch, torch.ones(3, requires_grad=True))
    got = run(fnn, fnn.ones(3, device=dev, requires_grad=True))
    np.testing.assert_allclose(got, want, rtol=1e-6)


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


@pytest.mark.parametrize("call", [
    lambda L: L.add(L.tensor([1.5, 2.0]), 1, out=L.zeros(2, dtype=L.int64)),
    lambda L: L.sum(L.tensor([1, 2]), 0, out=L.zeros((), dtype=L.bool)),
    lambda L: L.add(L.tensor([1, 2]), 1, out=L.zeros(2)),
    lambda L: L.mul(L.tensor([True, False]), True, out=L.zeros(2, dtype=L.int32)),
])
def test_out_casts_as_pytorchs_can_cast(call):
    """A float result written into an integer out= (or a number into a bool one) was
    truncated silently; PyTorch refuses it, and casts the other way."""
    ours, theirs = outcomes_as_torch(call)
    assert ours == theirs



def _into(make, dtype_name):
    """make(lib, out) called with an empty out of that dtype: (out is the result, out)."""
    def call(L):
        out = L.zeros(0, dtype=getattr(L, dtype_name))
        result = make(L, out)
        assert result is out
        return out
    return call


@pytest.mark.parametrize("dtype_name", ["float64", "int64"])
@pytest.mark.parametrize("make", [
    lambda L, out: L.zeros(2, 3, out=out),
    lambda L, out: L.ones((2, 2), out=out),
    lambda L, out: L.full((3,), 7, out=out),
    lambda L, out: L.arange(5, out=out),
    lambda L, out: L.linspace(0, 4, 5, out=out),
    lambda L, out: L.logspace(0, 2, 3, out=out),
    lambda L, out: L.eye(2, out=out),
    lambda L, out: L.zeros(2, dtype=L.float32, out=out),  # refused: out's dtype differs
])
def test_factories_fill_out_in_its_dtype(make, dtype_name):
    """The 'Introduction to PyTorch' tensors tutorial's torch.rand(2, 2, out=c): the
    factories took no out= at all."""
    ours, theirs = outcomes_as_torch(_into(make, dtype_name))
    assert ours == theirs


def test_random_factories_write_into_out():
    c = fnn.zeros(2, 2)
    row = c[0]
    assert fnn.rand(2, 2, out=c) is c
    assert c.dtype is fnn.float32 and np.all(row.numpy() == c.numpy()[0])
    assert 0 < np.unique(c.numpy()).size and np.all((c.numpy() >= 0) & (c.numpy() < 1))
    grown = fnn.zeros(0, dtype=fnn.float64)
    assert fnn.randn(3, out=grown) is grown and grown.shape == (3,)
    counts = fnn.zeros(0, dtype=fnn.int64)
    fnn.randint(0, 5, (4,), out=counts)
    fnn.randperm(6, out=counts)
    assert sorted(counts.tolist()) == list(range(6))

def _masked_scale(L):
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w.clone()
    y[y > 1.5] *= 2  # x[mask] read, then written back: the read keeps only the index
    y.sum().backward()
    return w.grad


def _index_then_write(L):
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = w * 1
    picked = x[L.tensor([2, 0])]
    x.add_(1)
    picked.sum().backward()
    return w.grad


def _index_then_write_the_index(L):
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    i = L.tensor([2, 0])
    picked = (w * 1).index_select(0, i)
    i.add_(0)
    picked.sum().backward()
    return w.grad


def _gather_then_write(L):
    w = L.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    x = w * 1
    picked = x.gather(1, L.tensor([[2, 0]]))
    x.add_(1)
    picked.sum().backward()
    return w.grad


def _index_add_into_one_buffer(L):
    # Hugging Face's Mixtral: each expert's output index_add_-ed into one zeros buffer
    w = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    out = L.zeros(4, 2)
    out.index_add_(0, L.tensor([0, 2]), w[:2] * 2)
    out.index_add_(0, L.tensor([2, 3, 3]), w * 3)
    (out * L.tensor([[1.0], [2.0], [3.0], [4.0]])).sum().backward()
    return w.grad


def _scatter_add_into_one_buffer(L):
    w = L.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    out = L.zeros(1, 4)
    out.scatter_add_(1, L.tensor([[0, 3, 3]]), w)
    out.scatter_add_(1, L.tensor([[1, 1, 0]]), w * w)
    (out * L.tensor([[1.0, 2.0, 3.0, 4.0]])).sum().backward()
    return w.grad


@pytest.mark.parametrize("case", [_masked_scale, _index_then_write,
                                  _index_then_write_the_index, _gather_then_write,
                                  _index_add_into_one_buffer, _scatter_add_into_one_buffer])
def test_indexing_keeps_what_pytorch_keeps_for_backward(case):
    """x[idx] and index_select keep the index, not x, as PyTorch's: y[y > 1.5] *= 2 on a
    non-leaf raised 'modified by an in-place operation' at backward; a write into the
    index still raises, and gather still keeps x (PyTorch's does). index_add_ and
    scatter_add_ keep their index only: adding into one buffer twice raised at backward
    (the saved int64 index was taken for a view of the buffer)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (fnn, torch):
        try:
            results.append(case(lib).tolist())
        except RuntimeError as exc:
            assert "modified by an in" in str(exc)
            results.append("refused")
    assert results[0] == results[1]


@pytest.mark.parametrize("write", [
    lambda y: y.add_(1.0), lambda y: y.__setitem__(0, 5.0),
    lambda y: y.view(-1)[1:].mul_(3.0),
])
def test_a_gelu_output_written_in_place_still_differentiates_as_pytorchs(write):
    """y = F.gelu(x); y += r raised 'modified by an in-place operation' at backward: the
    fused gradient reads gelu's output, which PyTorch's GeluBackward does not keep. The
    node now keeps a copy of the old output when it is overwritten."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (fnn, torch):
        w = lib.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
        y = lib.nn.functional.gelu(w)
        write(y)
        (y * lib.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


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
