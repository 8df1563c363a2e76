"""Sizes as varargs or one sequence (spelling.sizes_of), in every method that takes them,
against PyTorch."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn.ops.spelling import shape_of, sizes_of

torch = pytest.importorskip("torch")

CALLS = [
    ("view varargs", lambda x: x.view(3, 2)), ("view tuple", lambda x: x.view((6,))),
    ("view -1", lambda x: x.view(-1, 3)),
    ("reshape varargs", lambda x: x.reshape(2, -1)), ("reshape list", lambda x: x.reshape([3, 2])),
    ("permute varargs", lambda x: x.reshape(1, 2, 3).permute(0, 2, 1)),
    ("permute tuple", lambda x: x.reshape(1, 2, 3).permute((2, 0, 1))),
    ("repeat varargs", lambda x: x.repeat(2, 1)), ("repeat tuple", lambda x: x.repeat((1, 2, 1))),
    ("expand varargs", lambda x: x[:1].expand(4, -1)),
    ("expand tuple", lambda x: x[:1].expand((2, 2, 3))),
    ("expand a shape", lambda x: x[:1].expand(x.shape)),
]


@pytest.mark.parametrize("name, call", CALLS, ids=[c[0] for c in CALLS])
def test_methods_take_sizes_as_varargs_or_one_tuple(name, call, device):
    data = np.arange(6.0).reshape(2, 3)
    ours, theirs = call(fnn.tensor(data, device=device)), call(torch.tensor(data))
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_the_one_parser():
    assert sizes_of("op", (2, 3)) == (2, 3)
    assert sizes_of("op", ((2, 3),)) == (2, 3) == sizes_of("op", ([2, 3],))
    assert sizes_of("op", (np.int64(4),)) == (np.int64(4),)
    assert shape_of("op", (np.int64(4), 2)) == (4, 2)
    assert shape_of("op", ((),)) == ()
    with pytest.raises(TypeError, match="op: sizes must be ints or one sequence of ints, got "
                                        "float 1.5"):
        sizes_of("op", (1.5,))
    with pytest.raises(TypeError, match=r"op: sizes must be ints, got str 'a' in \(2, 'a'\); "
                                        "pass dtype= and device= as keywords"):
        shape_of("op", (2, "a"))
    with pytest.raises(ValueError, match=r"op: negative dimension in shape \(2, -3\)"):
        shape_of("op", ((2, -3),))


# PyTorch's keyword names for a method's arguments, as scripts write them
KEYWORDS = [
    ("transpose(dim0=, dim1=)", lambda lib, x: x.transpose(dim0=0, dim1=1)),
    ("transpose(1, dim1=0)", lambda lib, x: x.transpose(1, dim1=0)),
    ("copy_(src, non_blocking=)", lambda lib, x: x.copy_(lib.ones(2, 3), non_blocking=True)),
    ("requires_grad_(requires_grad=)",
     lambda lib, x: x.requires_grad_(requires_grad=True) * 1),
    ("numpy(force=)", lambda lib, x: lib.tensor(x.detach().numpy(force=True))),
]


@pytest.mark.parametrize("name, call", KEYWORDS, ids=[c[0] for c in KEYWORDS])
def test_methods_take_pytorchs_keyword_names(name, call):
    data = np.arange(6.0).reshape(2, 3)
    ours, theirs = call(fnn, fnn.tensor(data)), call(torch, torch.tensor(data))
    assert ours.shape == tuple(theirs.shape) and ours.requires_grad == theirs.requires_grad
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
