"""A view that changes nothing is still a new tensor, as in PyTorch: ``x.view(x.shape)``,
``x[...]``, ``x[:]``, ``x.expand(x.shape)``, ``squeeze()`` with nothing to squeeze, a
whole ``narrow``, ``view_as``/``reshape_as``/``expand_as`` of its own shape. Returning x
itself was a silent difference: ``detach_()`` or ``requires_grad_`` on the "view" changed
x, and a view of a leaf had no history. Ops where PyTorch does return x itself
(``contiguous()`` of a contiguous tensor, ``to``/``float`` of its own dtype, ``flatten``
of one dim) still do. Writes through the no-op views reach x on every backend
(tests/ops/test_views_inplace.py)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
from tests.ops.conftest import DEVICES

NEW = {  # the op on a (2, 3) tensor
    "view(same)": lambda lib, t: t.view(2, 3),
    "view(-1, 3)": lambda lib, t: t.view(-1, 3),
    "reshape(same)": lambda lib, t: t.reshape(t.shape),
    "reshape (function)": lambda lib, t: lib.reshape(t, (2, 3)),
    "x[...]": lambda lib, t: t[...],
    "x[:]": lambda lib, t: t[:],
    "x[:, :]": lambda lib, t: t[:, :],
    "squeeze()": lambda lib, t: t.squeeze(),
    "squeeze(0)": lambda lib, t: t.squeeze(0),
    "squeeze (function)": lambda lib, t: lib.squeeze(t),
    "expand(same)": lambda lib, t: t.expand(2, 3),
    "expand(-1, -1)": lambda lib, t: t.expand(-1, -1),
    "expand_as(self)": lambda lib, t: t.expand_as(t),
    "broadcast_to(same)": lambda lib, t: lib.broadcast_to(t, (2, 3)),
    "narrow(all)": lambda lib, t: t.narrow(0, 0, 2),
    "view_as(self)": lambda lib, t: t.view_as(t),
    "reshape_as(self)": lambda lib, t: t.reshape_as(t),
    "unflatten(1, (3,))": lambda lib, t: t.unflatten(1, (3,)),
    "permute(0, 1)": lambda lib, t: t.permute(0, 1),
    "movedim(0, 0)": lambda lib, t: t.movedim(0, 0),
    "chunk(1)[0]": lambda lib, t: t.chunk(1)[0],
    "split(2)[0]": lambda lib, t: t.split(2)[0],
    "split([2], 0)[0]": lambda lib, t: lib.split(t, [2], 0)[0],
    "tensor_split(x, 1)[0]": lambda lib, t: lib.tensor_split(t, 1)[0],
    "hsplit(x, 1)[0]": lambda lib, t: lib.hsplit(t, 1)[0],
}
SAME = {  # PyTorch gives x itself back
    "contiguous()": lambda lib, t: t.contiguous(),
    "to(its device)": lambda lib, t: t.to(t.device),
    "float()": lambda lib, t: t.float(),
    "type_as(self)": lambda lib, t: t.type_as(t),
    "flatten(1)": lambda lib, t: t.flatten(1),
    "flatten(0, 0)": lambda lib, t: t.flatten(0, 0),
    "atleast_2d": lambda lib, t: lib.atleast_2d(t),
}
COPIES = {  # PyTorch gives new memory, even where the values are x's own
    "cat([x])": lambda lib, t: lib.cat([t]),
    "cat([x], 1)": lambda lib, t: lib.cat((t,), 1),
    "stack([x])[0]": lambda lib, t: lib.stack([t])[0],
    "hstack([x])": lambda lib, t: lib.hstack([t]),
    "vstack([x])": lambda lib, t: lib.vstack([t]),
    "column_stack([x])": lambda lib, t: lib.column_stack([t]),
    "block_diag(x)": lambda lib, t: lib.block_diag(t),
    "repeat(1, 1)": lambda lib, t: t.repeat(1, 1),
    "repeat(2, 1, 1)": lambda lib, t: t.repeat(2, 1, 1),  # was a stride-0 view
    "repeat(3, 1)": lambda lib, t: t.repeat(3, 1),
    "tile(x, (1,))": lambda lib, t: lib.tile(t, (1,)),
    "tile(x, (2, 1, 1))": lambda lib, t: lib.tile(t, (2, 1, 1)),
    "roll(0, 0)": lambda lib, t: t.roll(0, 0),
    "roll(3, 1)": lambda lib, t: lib.roll(t, 3, 1),  # a whole turn
    "roll(0)": lambda lib, t: t.roll(0),
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", sorted(NEW))
def test_a_no_op_view_is_a_new_view_with_a_history(dev, case):
    x = fnn.tensor(np.arange(6.0).reshape(2, 3), device=dev, requires_grad=True)
    y = NEW[case](fnn, x)
    assert y is not x
    assert y.shape == x.shape and y._base is x
    assert not y.is_leaf and y.grad_fn is not None  # a view of a leaf has a history
    weights = np.arange(1.0, 7.0).reshape(2, 3)
    (y * fnn.tensor(weights, device=dev)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), weights)  # the identity's gradient


@pytest.mark.parametrize("case", sorted(SAME))
def test_ops_that_pytorch_answers_with_x_itself_still_do(case):
    x = fnn.zeros(2, 3, requires_grad=True)
    assert SAME[case](fnn, x) is x


@pytest.mark.parametrize("dev", DEVICES)
def test_what_is_done_to_a_no_op_view_leaves_x_as_it_was(dev):
    x = fnn.tensor(np.arange(6.0).reshape(2, 3), device=dev, requires_grad=True)
    y = x.view(x.shape)
    y.detach_()  # detaches the view only
    assert x.requires_grad and x.is_leaf and not y.requires_grad
    z = x[...]
    z.retain_grad()
    (z * 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.full((2, 3), 2.0))
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 2.0))
    plain = fnn.tensor(np.zeros((2, 3)), device=dev)
    alias = plain.squeeze()
    alias.requires_grad_()  # a leaf of its own; plain is untouched
    assert alias.requires_grad and not plain.requires_grad
    alias.data[0, 0] = 7.0  # still the same storage
    assert plain[0, 0].item() == 7.0


def test_which_ops_give_a_new_tensor_is_pytorchs():
    torch = pytest.importorskip("torch")
    for table, expect_same in ((NEW, False), (SAME, True)):
        for case, op in table.items():
            theirs = torch.zeros(2, 3, requires_grad=True)
            ours = fnn.zeros(2, 3, requires_grad=True)
            assert (op(torch, theirs) is theirs) is expect_same, case
            assert (op(fnn, ours) is ours) is expect_same, case


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", sorted(COPIES))
def test_an_op_that_copies_in_pytorch_never_hands_back_x_or_a_view(dev, case):
    # torch.cat([x]) gave x itself: writing into the "copy" wrote into x
    x = fnn.tensor(np.arange(6.0).reshape(2, 3), device=dev)
    y = COPIES[case](fnn, x)
    assert y is not x and y._base is not x
    y.add_(100.0)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_which_ops_copy_is_pytorchs():
    torch = pytest.importorskip("torch")
    for case, op in COPIES.items():
        x = torch.arange(6.0).reshape(2, 3)
        op(torch, x).add_(100.0)
        assert x.max().item() == 5.0, case


def test_view_as_a_dtype_is_refused_naming_the_conversion():
    x = fnn.zeros(2, 3)
    with pytest.raises(NotImplementedError, match=r"x\.to\(float64\)"):
        x.view(fnn.float64)
