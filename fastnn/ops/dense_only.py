"""PyTorch's sparse API met by fastnn's tensors, which are dense only.

What holds for a dense tensor answers as PyTorch's does (``x.to_dense()`` is x,
``torch.spmm`` of dense operands is their matrix product, ``x.sparse_dim()`` is 0); what
would make a sparse tensor raises NotImplementedError saying that fastnn has no sparse
layouts, instead of an AttributeError that names only the method (``fastnn.sparse`` and
the top-level constructors, ``torch.sparse_coo_tensor``, say so from ``fastnn``).
"""

from __future__ import annotations

from fastnn.ops.products import mm
from fastnn.ops.table import METHODS, public
from fastnn.ops.tensor import Tensor

DENSE_ONLY = ("fastnn's tensors are dense only (no sparse layouts); keep the data dense: "
              "fastnn's dense ops (matmul, index_add, scatter_add, embedding_bag) do the "
              "work of sparse ones")


@public(method=True, functional=False)
def to_dense(x: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """x itself (in ``dtype`` when given): a dense tensor is its own dense form."""
    return x if dtype is None else x.to(dtype)


@public(method=True, functional=False)
def sparse_dim(x: Tensor) -> int:
    """0: a dense tensor has no sparse dims."""
    return 0


@public(method=True, functional=False)
def dense_dim(x: Tensor) -> int:
    """x's number of dims: all of a dense tensor's dims are dense."""
    return x.ndim


@public(top=True, functional=False)
def spmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002  (PyTorch's name)
    """The matrix product of two 2-d tensors (PyTorch's spmm, given dense operands)."""
    return mm(input, mat2)


def _sparse_method(name: str):
    def convert(x: Tensor, *args, **kwargs):
        raise NotImplementedError(f"{name}(): {DENSE_ONLY}")

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"PyTorch's {name}, which needs sparse tensors: raises."
    return convert


for _name in ("to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr",
              "to_sparse_bsc", "sparse_mask", "sparse_resize_", "sparse_resize_and_clear_",
              "smm", "coalesce", "is_coalesced"):
    METHODS[_name] = _sparse_method(_name)
