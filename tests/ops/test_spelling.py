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
    # sizes by PyTorch's keyword (a generic *args/**kwargs re-dispatch would slow every call,
    # so each op names the keyword in its own signature)
    ("view(size=)", lambda lib, x: x.view(size=(3, 2))),
    ("reshape(shape=)", lambda lib, x: x.reshape(shape=(3, 2))),
    ("torch.reshape(x, shape=)", lambda lib, x: lib.reshape(x, shape=[6])),
    ("permute(dims=)", lambda lib, x: x.permute(dims=(1, 0))),
    ("torch.permute(x, dims=)", lambda lib, x: lib.permute(x, dims=[1, 0])),
    ("expand(size=)", lambda lib, x: x[:1].expand(size=(4, 3))),
    ("repeat(repeats=)", lambda lib, x: x.repeat(repeats=(2, 1))),
    ("broadcast_to(size=)", lambda lib, x: x[:1].broadcast_to(size=(2, 3))),
    ("torch.transpose(x, dim0=, dim1=)", lambda lib, x: lib.transpose(x, dim0=1, dim1=0)),
    # the second operand is PyTorch's other= (pow's exponent=)
    ("add(other=, alpha=)", lambda lib, x: x.add(other=x * 2, alpha=3)),
    ("torch.add(input=, other=)", lambda lib, x: lib.add(input=x, other=1.5)),
    ("sub(other=, alpha=)", lambda lib, x: x.sub(other=x, alpha=0.5)),
    ("mul(other=)", lambda lib, x: x.mul(other=x)),
    ("div(other=)", lambda lib, x: x.div(other=x + 1)),
    ("div(other=, rounding_mode=)", lambda lib, x: x.div(other=4, rounding_mode="floor")),
    ("remainder(other=)", lambda lib, x: x.remainder(other=4)),
    ("floor_divide(other=)", lambda lib, x: x.floor_divide(other=4)),
    ("pow(exponent=)", lambda lib, x: x.pow(exponent=2)),
    ("torch.pow(x, exponent=)", lambda lib, x: lib.pow(x, exponent=x)),
    ("pow_(exponent=)", lambda lib, x: x.clone().pow_(exponent=2)),
    ("matmul(other=)", lambda lib, x: x.matmul(other=x.T)),
    ("torch.matmul(input=, other=)", lambda lib, x: lib.matmul(input=x, other=x.T)),
    ("maximum(other=)", lambda lib, x: x.maximum(other=x.flip(1))),
    ("minimum(other=)", lambda lib, x: x.minimum(other=x.flip(1))),
    ("max(other=)", lambda lib, x: x.max(other=x.flip(1))),
    ("torch.min(x, other=)", lambda lib, x: lib.min(x, other=x.flip(1))),
    ("bitwise_and(other=)", lambda lib, x: x.long().bitwise_and(other=3)),
    ("bitwise_xor(other=)", lambda lib, x: x.long().bitwise_xor(other=x.long())),
    ("split(split_size=, dim=)", lambda lib, x: x.split(split_size=2, dim=1)[0]),
    ("norm(dim=, dtype=)", lambda lib, x: x.norm(dim=1, dtype=lib.float64)),
    ("torch.where(condition=, input=, other=)",
     lambda lib, x: lib.where(condition=x > 2, input=x, other=-x)),
    ("F.cosine_similarity(x1=, x2=)",
     lambda lib, x: lib.nn.functional.cosine_similarity(x1=x, x2=x + 1, dim=1)),
    ("torch.searchsorted(sorted_sequence=, input=)",
     lambda lib, x: lib.searchsorted(sorted_sequence=x[0], input=x[1] - 2.5, right=True)),
    ("F.cosine_embedding_loss(input1=, input2=, target=)",
     lambda lib, x: lib.nn.functional.cosine_embedding_loss(
         input1=x, input2=x.flip(1), target=lib.tensor([1.0, -1.0]), margin=0.1)),
]


@pytest.mark.parametrize("name, call", KEYWORDS, ids=[c[0] for c in KEYWORDS])
def test_methods_take_pytorchs_keyword_names(name, call):
    data = np.arange(6.0).reshape(2, 3)
    ours, theirs = call(fnn, fnn.tensor(data)), call(torch, torch.tensor(data))
    assert ours.shape == tuple(theirs.shape) and ours.requires_grad == theirs.requires_grad
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_randint_takes_high_and_size_by_keyword():
    """torch.randint(high=5, size=(2, 3)): low defaults to 0 (fastnn asked for low)."""
    fnn.manual_seed(0)
    got = fnn.randint(high=5, size=(200,))
    assert got.shape == tuple(torch.randint(high=5, size=(200,)).shape)
    assert got.dtype == fnn.int64 and 0 <= int(got.min()) and int(got.max()) <= 4


def test_sizes_by_keyword_and_as_arguments_is_an_error():
    with pytest.raises(TypeError, match="view: give the sizes as arguments or as size=, "
                                        "not both"):
        fnn.ones(6).view(2, 3, size=(3, 2))
    with pytest.raises(NotImplementedError, match="view.float64.: reinterpreting"):
        fnn.ones(6).view(dtype=fnn.float64)
